#pragma once
// One QApplication for all UI tests, on the offscreen platform.

class QApplication;

namespace ddpscope::ui::testing {
QApplication& app();
// Runs the event loop until pred() holds or timeout_ms passes; returns pred().
bool waitFor(const auto& pred, int timeout_ms = 20000);
}  // namespace ddpscope::ui::testing

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QThread>

namespace ddpscope::ui::testing {
bool waitFor(const auto& pred, int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (!pred() && t.elapsed() < timeout_ms) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return pred();
}
}  // namespace ddpscope::ui::testing
