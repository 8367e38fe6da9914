// The what-if predictor's fits and PyTorch DDP's bucket rule (whatif.h).
#include <algorithm>
#include <cmath>
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
    auto [it, inserted] = lowest.emplace(x[i], y[i]);
    if (!inserted) it->second = std::min(it->second, y[i]);
  }
  std::vector<double> lx, ly;
  for (const auto& [a, b] : lowest) {
    lx.push_back(a);
    ly.push_back(b);
  }
  LinearFit f = fitLine(lx, ly);
  f.samples = static_cast<std::int32_t>(x.size());
  residuals(f, lx, ly);
  return f;
}

}  // namespace ddpscope::analysis
