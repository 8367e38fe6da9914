#pragma once
// The left column: the runs loaded. A later issue adds the run-control panel below it
// (MainWindow::leftColumn()).

#include <QWidget>

class QListWidget;

namespace ddpscope::ui {

class Session;

class RunListPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunListPanel(Session* session, QWidget* parent = nullptr);
  QListWidget* list() const { return list_; }

 private:
  void refresh();
  Session* session_;
  QListWidget* list_;
};

}  // namespace ddpscope::ui
