// The what-if predictor's fits and PyTorch DDP's bucket rule (whatif.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "app/analysis/whatif.h"

namespace ddpscope::analysis {

std::int64_t mibToBytes(double mib) {
  return static_cast<std::int64_t>(std::llround(mib * 1048576.0));
}

std::vector<std::vector<std::int32_t>> planBuckets(const std::vector<GradTensor>& tensors,
                                                   std::int64_t cap_bytes,
                                                   std::int64_t first_cap_bytes) {
  std::vector<std::vector<std::int32_t>> buckets;
  std::vector<std::int64_t> bytes;
  std::map<std::string, std::size_t> open;  // dtype -> open bucket
  std::map<std::string, int> opened;        // dtype -> buckets opened so far
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    auto it = open.find(t.dtype);
    if (it == open.end()) {
      buckets.emplace_back();
      bytes.push_back(0);
      ++opened[t.dtype];
      it = open.emplace(t.dtype, buckets.size() - 1).first;
    }
    const std::size_t b = it->second;
    buckets[b].push_back(static_cast<std::int32_t>(i));
    bytes[b] += t.bytes;
    const std::int64_t cap = opened[t.dtype] == 1 ? first_cap_bytes : cap_bytes;
    if (bytes[b] >= cap) open.erase(it);
  }
  return buckets;
}

namespace {

void residuals(LinearFit& f, const std::vector<double>& x, const std::vector<double>& y) {
  double sq = 0, rel_sq = 0, worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = y[i] - (f.intercept + f.slope * x[i]);
    sq += r * r;
    if (y[i] > 0) {
      rel_sq += (r / y[i]) * (r / y[i]);
      worst = std::max(worst, std::abs(r / y[i]));
    }
  }
  const auto n = static_cast<double>(std::max<std::size_t>(1, x.size()));
  f.residual_rms = std::sqrt(sq / n);
  f.residual_rel = std::sqrt(rel_sq / n);
  f.worst_rel = worst;
}

}  // namespace

LinearFit fitLine(const std::vector<double>& x, const std::vector<double>& y) {
  LinearFit f;
  f.samples = static_cast<std::int32_t>(x.size());
  if (x.empty()) return f;
  const auto n = static_cast<double>(x.size());
  double sx = 0, sy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
  }
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx <= 1e-12 * std::max(1.0, mx * mx)) {
    // One distinct size: latency and bandwidth cannot be told apart; through the origin.
    f.intercept = 0;
    f.slope = mx > 0 ? my / mx : 0;
    if (mx <= 0) f.intercept = my;
  } else {
    f.slope = sxy / sxx;
    f.intercept = my - f.slope * mx;
    if (f.slope < 0) {
      f.slope = 0;
      f.intercept = my;
    } else if (f.intercept < 0) {
      double num = 0, den = 0;  // through the origin
      for (std::size_t i = 0; i < x.size(); ++i) {
        num += x[i] * y[i];
        den += x[i] * x[i];
      }
      f.intercept = 0;
      f.slope = den > 0 ? num / den : 0;
    }
  }
  residuals(f, x, y);
  return f;
}

LinearFit fitLowerEnvelope(const std::vector<double>& x, const std::vector<double>& y) {
  std::map<double, double> lowest;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;  // no order for a NaN key
    auto [it, inserted] = lowest.emplace(x[i], y[i]);
    if (!inserted) it->second = std::min(it->second, y[i]);
  }
  std::vector<double> lx, ly;
  for (const auto& [a, b] : lowest) {
    lx.push_back(a);
    ly.push_back(b);
  }
  LinearFit f = fitLine(lx, ly);
  // Two or more sizes: the line under every size's shortest that lies closest to them (least
  // total distance; a linear programme whose optimum is a line through two of them, or a flat
  // or origin line through one). A least-squares line through the minima is pulled up by a size
  // that waited in every sample (the first bucket of a run without overlap waits for the late
  // rank's backward, the later ones do not): it would be a cost above what the others took.
  if (lx.size() >= 2 && lx.size() <= 512) {
    const auto feasible = [&](double a, double b) {
      for (std::size_t k = 0; k < lx.size(); ++k)
        if (a + b * lx[k] > ly[k] * (1 + 1e-9) + 1e-9) return false;
      return true;
    };
    const auto distance = [&](double a, double b) {
      double d = 0;
      for (std::size_t k = 0; k < lx.size(); ++k)
        d += ly[k] - (a + b * lx[k]);
      return d;
    };
    double best_a = 0, best_b = 0, best = std::numeric_limits<double>::max();
    const auto consider = [&](double a, double b) {
      if (a < 0 || b < 0 || !feasible(a, b)) return;
      if (const double d = distance(a, b); d < best) {
        best = d;
        best_a = a;
        best_b = b;
      }
    };
    consider(*std::min_element(ly.begin(), ly.end()), 0);  // flat
    double origin = std::numeric_limits<double>::max();
    for (std::size_t k = 0; k < lx.size(); ++k)
      if (lx[k] > 0) origin = std::min(origin, ly[k] / lx[k]);
    if (origin < std::numeric_limits<double>::max()) consider(0, origin);
    for (std::size_t i = 0; i < lx.size(); ++i)
      for (std::size_t j = i + 1; j < lx.size(); ++j) {
        const double b = (ly[j] - ly[i]) / (lx[j] - lx[i]);  // lx is sorted and distinct
        consider(ly[i] - b * lx[i], b);
      }
    if (best < std::numeric_limits<double>::max()) {
      f.intercept = best_a;
      f.slope = best_b;
    }
  }
  f.samples = static_cast<std::int32_t>(x.size());
  residuals(f, lx, ly);
  return f;
}

}  // namespace ddpscope::analysis
