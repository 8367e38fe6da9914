#pragma once
// Table cells the panels share.

#include <QString>
#include <QTableWidgetItem>

namespace ddpscope::ui {

// A right-aligned, read-only number that sorts by the value behind its text ("150 ms" after
// "24 µs"), not by the text.
class NumberItem : public QTableWidgetItem {
 public:
  static constexpr int kSortRole = Qt::UserRole + 2;

  NumberItem(const QString& text, double value) : QTableWidgetItem(text) {
    setData(kSortRole, value);
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    setFlags(flags() & ~Qt::ItemIsEditable);
  }
  bool operator<(const QTableWidgetItem& other) const override {
    return data(kSortRole).toDouble() < other.data(kSortRole).toDouble();
  }
};

}  // namespace ddpscope::ui
