#pragma once
// The Digest tab: a run digest (docs/DIGEST.md) as a ranks × steps heatmap of one figure, the
// run's headline figures and late rank as the digest states them, and the ranks to load in full.
// Loading is the main window's (the normal run loading path): the view says which files.

#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "app/analysis/digest_reader.h"
#include "app/ui/plot_export.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace ddpscope::ui {

class DigestHeatmap;

// "0–3, 7": ranks as runs of consecutive numbers.
QString rankListText(const std::vector<std::int32_t>& ranks);
// Parses "0-3, 7" (also "0–3"); none with a message for anything else.
std::optional<std::vector<std::int32_t>> parseRankList(const QString& text, QString* error);

class DigestView : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  explicit DigestView(QWidget* parent = nullptr);

  // The heatmap as a figure (File ▸ Export current chart, `ddpscope --export FILE DIGEST`): the
  // figure shown, titled with the digest's name, source and ranks, its headline figures and its
  // late rank, in the light theme. False with a message when no digest is open.
  bool exportChart(const QString& path, double scale, QString* error) override;
  // The title that figure carries.
  QString exportTitle() const;

  // Shows a digest; `name` is what it is called (its file), `folders` where its trace files are
  // looked for (and in their subfolders: analysis::digestRankFiles).
  void setDigest(std::shared_ptr<const analysis::Digest> digest, const QString& name,
                 const QStringList& folders);
  std::shared_ptr<const analysis::Digest> digest() const { return digest_; }
  QString name() const { return name_; }
  QStringList folders() const { return folders_; }
  // One more folder to look for trace files in (a node's copy of its ranks); the button "Trace
  // folders…" asks for one.
  void addTraceFolder(const QString& folder);
  DigestHeatmap* heatmap() const { return heatmap_; }
  QComboBox* figureBox() const { return figure_; }
  // Shows `figure`; false (nothing changes) when the digest has no value of it (it cannot be
  // chosen then).
  bool setFigure(analysis::DigestFigure figure);

  // What the view says (for tests): the headline line, the late-rank line, the selection.
  QString headlineText() const;
  // The warnings under the headline: the run's, then the ranks' own (counted, the first quoted).
  QString warningsText() const;
  QString lateRankText() const;
  // What a cell of the figure shown is (analysis::digestFigureDefinition).
  QString figureNoteText() const;
  QString rankSelectionText() const;
  void setRankSelectionText(const QString& text);

  // The trace files of the selected ranks, found in the folders with the size (and, when that
  // is not enough, the content) the digest states; an error naming the first rank whose file is
  // not there (or the bad rank list) otherwise, through loadFailed.
  void loadSelected();

 signals:
  // The files of `ranks` to open as one run.
  void loadRequested(const QStringList& files, const QString& ranks);
  void loadFailed(const QString& message);

 private:
  void showFigure();

  std::shared_ptr<const analysis::Digest> digest_;
  void updateFolderTip();

  QString name_;
  QStringList folders_;
  QLabel* title_;
  QLabel* headline_;
  QLabel* late_;
  QLabel* warnings_;
  QLabel* figure_note_;
  QComboBox* figure_;
  DigestHeatmap* heatmap_;
  QLineEdit* ranks_;
  QPushButton* load_;
  QPushButton* add_folder_;
};

}  // namespace ddpscope::ui
