#include "app/ui/palette.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QIcon>
#include <QPainter>
#include <QPalette>
#include <QPixmap>
#include <QStyle>
#include <QStyleFactory>
#include <algorithm>

#include "app/ui/plot_style.h"
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
    case kStyleCommWaiting:
      return colours::kCommWaiting;
    case kStyleMemory:
      return colours::kMemory;
    case kStyleSync:
      return colours::kSync;
    case kStyleStep:
      return colours::kStep;
    case kStyleCutShort:
      return colours::kWarning;
    case kStyleHostOp:
      return colours::kHostOp;
    case kStyleHostAnnotation:
      return colours::kHostAnnotation;
    case kStyleHostLaunch:
      return colours::kHostLaunch;
    case kStyleHostComm:
      return colours::kHostComm;
    case kStyleHostDataLoader:
      return colours::kHostDataLoader;
    case kStyleGpuAnnotation:
      return colours::kGpuAnnotation;
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
  if (source == "predicted") return QStringLiteral("PREDICTED");
  if (source == "imported") return QStringLiteral("IMPORTED");
  return QStringLiteral("MIXED");
}

QColor badgeColour(std::string_view source) {
  if (source == "sim") return colours::kBadgeSimulated;
  if (source == "cuda") return colours::kBadgeCuda;
  if (source == "predicted") return colours::kBadgePredicted;
  return colours::kBadgeOther;
}

void applyAppTheme(const QString& theme) {
  // The system's look, kept from before any theme was applied, so that "system" brings it back.
  static const QPalette system_palette = QApplication::palette();
  static const QString system_style = QApplication::style()->name();
  if (theme == QLatin1String("system")) {
    if (QStyle* style = QStyleFactory::create(system_style)) QApplication::setStyle(style);
    QApplication::setPalette(system_palette);
  } else {
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QPalette pal = QApplication::style()->standardPalette();
    if (theme == QLatin1String("dark")) {
      // Every role a widget draws with, in both the active and the disabled state.
      const QColor dim = colours::kDarkThemeText.darker(170);
      for (const auto group : {QPalette::Active, QPalette::Inactive, QPalette::Disabled}) {
        const bool disabled = group == QPalette::Disabled;
        const QColor text = disabled ? dim : colours::kDarkThemeText;
        pal.setColor(group, QPalette::Window, colours::kDarkThemeWindow);
        pal.setColor(group, QPalette::WindowText, text);
        pal.setColor(group, QPalette::Base, colours::kDarkThemeBase);
        pal.setColor(group, QPalette::AlternateBase, colours::kDarkThemeWindow);
        pal.setColor(group, QPalette::Text, text);
        pal.setColor(group, QPalette::Button, colours::kDarkThemeButton);
        pal.setColor(group, QPalette::ButtonText, text);
        pal.setColor(group, QPalette::BrightText, colours::kDarkThemeText);
        pal.setColor(group, QPalette::ToolTipBase, colours::kDarkThemeButton);
        pal.setColor(group, QPalette::ToolTipText, colours::kDarkThemeText);
        pal.setColor(group, QPalette::PlaceholderText, dim);
        pal.setColor(group, QPalette::Light, colours::kDarkThemeButton.lighter(130));
        pal.setColor(group, QPalette::Midlight, colours::kDarkThemeButton.lighter(115));
        pal.setColor(group, QPalette::Mid, colours::kDarkThemeMid);
        pal.setColor(group, QPalette::Dark, colours::kDarkThemeBase.darker(130));
        pal.setColor(group, QPalette::Shadow, colours::kDarkThemeBase.darker(200));
        pal.setColor(group, QPalette::Highlight, colours::kCompute);
        pal.setColor(group, QPalette::HighlightedText, colours::kTextOnDarkFill);
        pal.setColor(group, QPalette::Link, colours::kPredicted);
      }
    }
    QApplication::setPalette(pal);
  }
  // The charts took their colours when they were drawn: draw them again in the new ones.
  for (QWidget* w : QApplication::allWidgets()) {
    if (auto* plot = qobject_cast<QCustomPlot*>(w)) {
      applyPlotTheme(plot, PlotTheme::System);
      plot->replot();
    }
  }
}

}  // namespace ddpscope::ui
