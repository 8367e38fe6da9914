#pragma once
// Details tab: the event clicked on the timeline (name, stream, times, bucket, bytes, bandwidth,
// and how much of it overlaps the other class of work on its rank).

#include <QWidget>

class QTextBrowser;

namespace ddpscope::ui {

class Session;

class DetailsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DetailsPanel(Session* session, QWidget* parent = nullptr);
  QString text() const;

 private:
  void refresh();
  Session* session_;
  QTextBrowser* view_;
};

}  // namespace ddpscope::ui
