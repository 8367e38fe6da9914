#include "tests/ui/ui_test_app.h"

#include <QApplication>
#include <QStandardPaths>

namespace ddpscope::ui::testing {
QApplication& app() {
  static int argc = 1;
  static char name[] = "ui_tests";
  static char* argv[] = {name, nullptr};
  static QApplication* instance = [] {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QStandardPaths::setTestModeEnabled(true);  // recent files go to a test location
    return new QApplication(argc, argv);
  }();
  return *instance;
}
}  // namespace ddpscope::ui::testing
