#include "app/ui/palette.h"

#include <QApplication>
#include <QIcon>
#include <QPainter>
#include <QPalette>
#include <QPixmap>
#include <QStyle>
#include <QStyleFactory>
#include <algorithm>

#include "app/ui/timeline_model.h"

namespace ddpscope::ui {

namespace {
// Categorical colours for buckets that avoid the five role colours.
const QColor kBucketPalette[kBucketColours] = {QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9),
                                               QColor(0xCC, 0x79, 0xA7), QColor(0x33, 0x22, 0x88),
                                               QColor(0x88, 0x22, 0x55), QColor(0x8C, 0x6D, 0x31)};
}  // namespace

QColor bucketColour(std::int32_t id) {
  const int k = ((id % kBucketColours) + kBucketColours) % kBucketColours;
  return kBucketPalette[k];
}

QColor collectiveKindColour(analysis::CollectiveKind kind) {
  using analysis::CollectiveKind;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return colours::kAllReduce;
    case CollectiveKind::ReduceScatter:
      return colours::kReduceScatter;
    case CollectiveKind::AllGather:
      return colours::kAllGather;
    case CollectiveKind::AllToAll:
      return colours::kAllToAll;
    case CollectiveKind::Broadcast:
      return colours::kBroadcast;
    case CollectiveKind::Reduce:
      return colours::kReduce;
    case CollectiveKind::SendRecv:
      return colours::kSendRecv;
    case CollectiveKind::None:
    case CollectiveKind::Unknown:
      break;
  }
  return colours::kCommUnknown;
}

QColor styleColour(std::uint16_t style) {
  if (isCommKindStyle(style)) return collectiveKindColour(commKindOfStyle(style));
  switch (style) {
    case kStyleCompute:
      return colours::kCompute;
    case kStyleCommHidden:
      return colours::kCommHidden;
    case kStyleCommExposed:
      return colours::kCommExposed;
    case kStyleMemory:
      return colours::kMemory;
    case kStyleSync:
      return colours::kSync;
    case kStyleStep:
      return colours::kStep;
    case kStyleCutShort:
      return colours::kWarning;
    default:
      break;
  }
  const int k = (style - kStyleBucketBase) / 2;
  QColor c = kBucketPalette[std::clamp(k, 0, kBucketColours - 1)];
  if ((style - kStyleBucketBase) % 2 == 1) c.setAlpha(80);  // the wait before the allreduce
  return c;
}

QIcon warningIcon() {
  QPixmap pm(32, 32);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(Qt::NoPen);
  p.setBrush(colours::kWarning);
  p.drawEllipse(QRectF(1, 1, 30, 30));
  p.setBrush(textOn(colours::kWarning));
  p.drawRoundedRect(QRectF(13.5, 6, 5, 13), 2, 2);
  p.drawEllipse(QRectF(13.5, 21.5, 5, 5));
  p.end();
  return QIcon(pm);
}

QColor textOn(const QColor& fill) {
  const double y = 0.299 * fill.redF() + 0.587 * fill.greenF() + 0.114 * fill.blueF();
  return y > 0.6 || fill.alpha() < 128 ? colours::kTextOnLightFill : colours::kTextOnDarkFill;
}

QString sourceBadge(std::string_view source) {
  if (source == "sim") return QStringLiteral("SIMULATED");
  if (source == "cuda") return QStringLiteral("CUDA");
  if (source == "imported") return QStringLiteral("IMPORTED");
  return QStringLiteral("MIXED");
}

QColor badgeColour(std::string_view source) {
  if (source == "sim") return colours::kBadgeSimulated;
  if (source == "cuda") return colours::kBadgeCuda;
  return colours::kBadgeOther;
}

void applyAppTheme(const QString& theme) {
  if (theme == QLatin1String("system")) return;  // the window follows the system palette
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette pal = QApplication::style()->standardPalette();
  if (theme == QLatin1String("dark")) {
    pal.setColor(QPalette::Window, colours::kDarkThemeWindow);
    pal.setColor(QPalette::WindowText, colours::kDarkThemeText);
    pal.setColor(QPalette::Base, colours::kDarkThemeBase);
    pal.setColor(QPalette::AlternateBase, colours::kDarkThemeWindow);
    pal.setColor(QPalette::Text, colours::kDarkThemeText);
    pal.setColor(QPalette::Button, colours::kDarkThemeButton);
    pal.setColor(QPalette::ButtonText, colours::kDarkThemeText);
    pal.setColor(QPalette::Mid, colours::kDarkThemeMid);
  }
  QApplication::setPalette(pal);
}

}  // namespace ddpscope::ui
