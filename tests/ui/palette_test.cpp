// The timeline's fills stay apart: every pair of colours a user reads side by side (the stream
// lanes' classes, the host lanes' kinds, the GPU annotation lanes) differs by a visible step in
// OKLab, a perceptual space (the CSS Color 4 definition, computed here on its own).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "app/ui/palette.h"

namespace {

double linear(double c) {
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

std::array<double, 3> oklab(const QColor& c) {
  const double r = linear(c.redF()), g = linear(c.greenF()), b = linear(c.blueF());
  const double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
          1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
          0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

double distance(const QColor& a, const QColor& b) {
  const auto x = oklab(a), y = oklab(b);
  return std::hypot(x[0] - y[0], x[1] - y[1], x[2] - y[2]);
}

}  // namespace

TEST(Palette, ClassAndHostColoursAreApartInOklab) {
  using namespace ddpscope::ui::colours;
  const std::vector<std::pair<std::string, QColor>> fills = {
      {"compute", kCompute},
      {"communication hidden", kCommHidden},
      {"communication exposed", kCommExposed},
      {"memory", kMemory},
      {"synchronisation", kSync},
      {"CPU op", kHostOp},
      {"user annotation", kHostAnnotation},
      {"runtime/driver call", kHostLaunch},
      {"DDP / nccl range", kHostComm},
      {"data loading", kHostDataLoader},
      {"GPU annotation", kGpuAnnotation},
  };
  // About the closest pair of Okabe-Ito's and Tol's own schemes side by side (hidden
  // communication against GPU annotations: 0.098); two light yellows were 0.067 apart.
  constexpr double kApart = 0.09;
  for (std::size_t i = 0; i < fills.size(); ++i)
    for (std::size_t j = i + 1; j < fills.size(); ++j)
      EXPECT_GE(distance(fills[i].second, fills[j].second), kApart)
          << fills[i].first << " and " << fills[j].first;
  // The check itself: black and white are 1 apart, a colour is 0 from itself.
  EXPECT_NEAR(distance(Qt::black, Qt::white), 1.0, 1e-3);
  EXPECT_EQ(distance(kSync, kSync), 0.0);
}
