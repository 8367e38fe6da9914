#include "app/ui/run_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QUuid>
#include <QVBoxLayout>

#include "app/ui/agent_process.h"
#include "app/ui/agent_run_job.h"
#include "app/ui/palette.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
constexpr int kProbeTimeoutMs = 60000;

// A failure message without its "Command: ..." line, which the panel shows right below it.
QString withoutCommand(const QString& message) {
  QStringList lines = message.split(QLatin1Char('\n'));
  lines.removeIf([](const QString& line) { return line.startsWith(QLatin1String("Command: ")); });
  return lines.join(QLatin1Char('\n'));
}

QDoubleSpinBox* megabytesBox(QWidget* parent) {
  auto* box = new QDoubleSpinBox(parent);
  box->setRange(0, 100000);
  box->setDecimals(2);
  box->setSuffix(QStringLiteral(" MiB"));
  return box;
}
}  // namespace

RunPanel::RunPanel(Session* session, QWidget* parent)
    : QWidget(parent), session_(session), job_(new AgentRunJob(this)) {
  job_->setLoadPartialRuns(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* title = new QHBoxLayout;
  title->addWidget(new QLabel(tr("<b>Run</b>"), this));
  title->addStretch(1);
  from_run_ = new QPushButton(tr("From selected run"), this);
  from_run_->setToolTip(
      tr("Set these knobs to the ones the selected run was made with, to change one and run "
         "again (runs the agent made: its settings are in each trace)"));
  title->addWidget(from_run_);
  layout->addLayout(title);
  layout->addLayout(buildForm());
  auto* sweep = buildControls(layout);
  connect(run_, &QPushButton::clicked, this, &RunPanel::startRun);
  connect(cancel_, &QPushButton::clicked, this, &RunPanel::cancelRun);
  connect(sweep, &QPushButton::clicked, this, &RunPanel::sweepRequested);
  connect(from_run_, &QPushButton::clicked, this, &RunPanel::takeCurrentRunsSettings);
  connect(session_, &Session::currentRunChanged, this, &RunPanel::updateFromRunButton);
  connect(session_, &Session::runsChanged, this, &RunPanel::updateFromRunButton);
  connectJob();

  setParameters(settings::lastRunParameters());
  refreshFromSettings();
  setBusy(false);
  updateFromRunButton();
}

namespace {
std::optional<RunParameters> settingsOf(const std::shared_ptr<const LoadedRun>& run) {
  if (!run || run->run.ranks.empty()) return std::nullopt;
  return runParametersOf(run->run.ranks.front());
}
}  // namespace

void RunPanel::updateFromRunButton() {
  from_run_->setEnabled(settingsOf(session_->current()).has_value());
}

bool RunPanel::takeCurrentRunsSettings() {
  const auto run = session_->current();
  const auto p = settingsOf(run);
  if (!p) {
    showStatus(run ? tr("%1 was not made by the agent: it has no settings to take.").arg(run->name)
                   : tr("No run is selected."),
               true);
    return false;
  }
  setParameters(*p);
  // What the knobs could not hold (a backend not offered here, a value past a box's range or
  // finer than its steps, a model or fusion the panel does not know), each named.
  const RunParameters shown = parameters();
  QStringList differ;
  const auto note = [&](bool same, const QString& knob, const QString& was, const QString& now) {
    if (!same) differ << tr("%1 %2 (now %3)").arg(knob, was, now);
  };
  const auto mb = [](double v) { return QString::number(v, 'g', 12) + QStringLiteral(" MiB"); };
  // A backend not offered here is a note (the simulator stands in); another knob that cannot
  // hold its value is a warning: the run would not be the same.
  const bool backend_differs = shown.backend != p->backend;
  note(!backend_differs, tr("backend"), p->backend, backend_->currentText());
  note(shown.world_size == p->world_size, tr("world"), QString::number(p->world_size),
       QString::number(shown.world_size));
  note(shown.bucket_mb == p->bucket_mb, tr("bucket"), mb(p->bucket_mb), mb(shown.bucket_mb));
  note(shown.first_bucket_mb == p->first_bucket_mb, tr("first"), mb(p->first_bucket_mb),
       mb(shown.first_bucket_mb));
  note(shown.fusion == p->fusion, tr("fusion"), p->fusion, shown.fusion);
  note(shown.model == p->model, tr("model"), p->model, shown.model);
  note(shown.layers == p->layers, tr("layers"), QString::number(p->layers),
       QString::number(shown.layers));
  note(shown.hidden == p->hidden, tr("hidden"), QString::number(p->hidden),
       QString::number(shown.hidden));
  note(shown.steps == p->steps, tr("steps"), QString::number(p->steps),
       QString::number(shown.steps));
  if (differ.isEmpty()) {
    showStatus(tr("Settings of %1 taken.").arg(run->name), false);
  } else {
    showStatus(tr("Settings of %1 taken, but these knobs cannot hold what it ran with: %2.")
                   .arg(run->name, differ.join(QStringLiteral("; "))),
               differ.size() > (backend_differs ? 1 : 0));
  }
  return true;
}

QFormLayout* RunPanel::buildForm() {
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  backend_ = new QComboBox(this);
  backend_->addItem(tr("simulated"), QStringLiteral("sim"));
  backend_->setToolTip(tr("CUDA appears once the agent reports a usable GPU"));
  world_ = new QSpinBox(this);
  world_->setRange(1, 4096);
  bucket_ = megabytesBox(this);
  bucket_->setSpecialValueText(tr("0 (per tensor)"));
  bucket_->setToolTip(tr("Bucket cap; 0 = one allreduce per gradient tensor"));
  first_bucket_ = megabytesBox(this);
  overlap_ = new QCheckBox(tr("overlap"), this);
  overlap_->setToolTip(tr("Allreduce each bucket while backward continues (off: --no-overlap)"));
  fusion_ = new QComboBox(this);
  fusion_->addItem(tr("view (no copies)"), QStringLiteral("view"));
  fusion_->addItem(tr("copy (pack/unpack)"), QStringLiteral("copy"));
  model_ = new QComboBox(this);
  model_->addItem(tr("transformer"), QStringLiteral("transformer"));
  model_->addItem(tr("mlp"), QStringLiteral("mlp"));
  layers_ = new QSpinBox(this);
  layers_->setRange(1, 1000);
  hidden_ = new QSpinBox(this);
  hidden_->setRange(8, 65536);
  hidden_->setSingleStep(64);
  steps_ = new QSpinBox(this);
  steps_->setRange(1, 100000);
  launcher_ = new QCheckBox(tr("multi-node (launcher)"), this);
  form->addRow(tr("backend"), backend_);
  form->addRow(tr("world"), world_);
  form->addRow(tr("bucket"), bucket_);
  form->addRow(tr("first"), first_bucket_);
  form->addRow(overlap_);
  form->addRow(tr("fusion"), fusion_);
  form->addRow(tr("model"), model_);
  form->addRow(tr("layers"), layers_);
  form->addRow(tr("hidden"), hidden_);
  form->addRow(tr("steps"), steps_);
  form->addRow(launcher_);
  connect(model_, &QComboBox::currentIndexChanged, this, [this] {
    RunParameters p = parameters();
    applyModelPreset(p, model_->currentData().toString());
    layers_->setValue(p.layers);
    hidden_->setValue(p.hidden);
  });
  return form;
}

QPushButton* RunPanel::buildControls(QVBoxLayout* layout) {
  auto* buttons = new QHBoxLayout;
  run_ = new QPushButton(tr("Run"), this);
  run_->setToolTip(tr("Start ddpscope-agent with these settings (Run ▸ Run agent, Ctrl+R)"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  auto* sweep = new QPushButton(tr("Sweep…"), this);
  sweep->setToolTip(tr("Run a bucket-size sweep with these settings (Sweep tab)"));
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  buttons->addWidget(sweep);
  layout->addLayout(buttons);
  progress_ = new QProgressBar(this);
  progress_->setFormat(QStringLiteral("%v/%m"));
  layout->addWidget(progress_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  command_ = new QLabel(this);
  command_->setWordWrap(true);
  command_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  mono.setPointSizeF(mono.pointSizeF() * 0.85);
  command_->setFont(mono);
  layout->addWidget(command_);
  return sweep;
}

void RunPanel::connectJob() {
  connect(job_, &AgentRunJob::started, this, [this](const QString& command) {
    last_command_ = command;
    command_->setText(QStringLiteral("$ ") + command);
    command_->setToolTip(command);
  });
  connect(job_, &AgentRunJob::progress, this, [this](int step, int steps) {
    progress_->setRange(0, std::max(1, steps));
    progress_->setValue(step);
  });
  connect(job_, &AgentRunJob::loading, this,
          [this] { showStatus(tr("Loading the traces…"), false); });
  connect(job_, &AgentRunJob::loaded, this, [this](std::shared_ptr<LoadedRun> run) {
    const QString warning = job_->warning();
    if (warning.isEmpty()) {
      showStatus(tr("Opened %1").arg(run->name), false);
    } else {
      // The agent failed after writing some traces: they are open, marked incomplete.
      last_error_ = warning;
      showStatus(tr("Opened %1 as %2: what the agent wrote before it failed.\n%3")
                     .arg(run->name, kIncompleteBadge, withoutCommand(warning)),
                 true);
    }
    session_->addRun(std::move(run));
    setBusy(false);
    emit runFinished(warning.isEmpty());
  });
  connect(job_, &AgentRunJob::failed, this, [this](const QString& message) {
    last_error_ = message;
    showStatus(withoutCommand(message), true);
    setBusy(false);
    emit runFinished(false);
  });
  connect(job_, &AgentRunJob::cancelled, this, [this] {
    showStatus(tr("Run cancelled; the runs already open are unchanged."), false);
    setBusy(false);
    emit runFinished(false);
  });
}

void RunPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  // Asked once, when the panel is first seen (not for headless exports, which never show it).
  if (!probed_) probeCuda();
}

RunPanel::~RunPanel() {
  if (!probe_dir_.isEmpty()) QDir(probe_dir_).removeRecursively();
}

RunParameters RunPanel::parameters() const {
  RunParameters p;
  p.backend = backend_->currentData().toString();
  p.world_size = world_->value();
  p.bucket_mb = bucket_->value();
  p.first_bucket_mb = first_bucket_->value();
  p.overlap = overlap_->isChecked();
  p.fusion = fusion_->currentData().toString();
  p.model = model_->currentData().toString();
  p.layers = layers_->value();
  p.hidden = hidden_->value();
  p.steps = steps_->value();
  return p;
}

void RunPanel::setParameters(const RunParameters& p) {
  const int backend = backend_->findData(p.backend);
  backend_->setCurrentIndex(backend >= 0 ? backend : 0);
  world_->setValue(p.world_size);
  bucket_->setValue(p.bucket_mb);
  first_bucket_->setValue(p.first_bucket_mb);
  overlap_->setChecked(p.overlap);
  fusion_->setCurrentIndex(std::max(0, fusion_->findData(p.fusion)));
  {
    QSignalBlocker block(model_);  // keep the sizes given, not the preset's
    model_->setCurrentIndex(std::max(0, model_->findData(p.model)));
  }
  layers_->setValue(p.layers);
  hidden_->setValue(p.hidden);
  steps_->setValue(p.steps);
}

bool RunPanel::useLauncher() const {
  return launcher_->isEnabled() && launcher_->isChecked();
}

void RunPanel::setUseLauncher(bool on) {
  launcher_->setChecked(on);
}

void RunPanel::refreshFromSettings() {
  const QString t = settings::launcherTemplate();
  launcher_->setEnabled(!t.trimmed().isEmpty());
  launcher_->setToolTip(t.trimmed().isEmpty()
                            ? tr("Set a launcher template (mpirun/srun) in Settings")
                            : tr("Launch with: %1\nTraces go to %2 (must be shared by all nodes)")
                                  .arg(t, settings::tracesFolder()));
}

bool RunPanel::busy() const {
  return job_->busy();
}

void RunPanel::startRun() {
  if (job_->busy()) return;
  const RunParameters p = parameters();
  settings::setLastRunParameters(p);
  last_error_.clear();
  progress_->setRange(0, p.steps);
  progress_->setValue(0);
  showStatus(tr("Running %1…").arg(runLabel(p)), false);
  setBusy(true);
  job_->start(p, useLauncher());
}

void RunPanel::cancelRun() {
  job_->cancel();
}

QString RunPanel::statusText() const {
  return status_->text();
}

void RunPanel::setBusy(bool busy) {
  run_->setEnabled(!busy);
  cancel_->setEnabled(busy);
  progress_->setVisible(busy);
}

void RunPanel::showStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color: %1;").arg(colours::kErrorText.name())
                               : QString());
}

void RunPanel::probeCuda() {
  // The agent says whether it can use a GPU: exit 0 for a one-step CUDA run, 3 when unavailable.
  probed_ = true;
  const QString agent = settings::agentPath();
  if (!QFileInfo(agent).isExecutable()) return;
  probe_dir_ = QDir(QDir::tempPath())
                   .filePath(QStringLiteral("ddpscope-cuda-probe-") +
                             QUuid::createUuid().toString(QUuid::WithoutBraces));
  probe_ = new AgentProcess(this);
  connect(probe_, &AgentProcess::finished, this, [this](const AgentOutcome& outcome) {
    cuda_available_ = outcome.ok();
    if (cuda_available_ && backend_->findData(QStringLiteral("cuda")) < 0) {
      backend_->addItem(tr("CUDA"), QStringLiteral("cuda"));
      if (settings::lastRunParameters().backend == QLatin1String("cuda"))
        backend_->setCurrentIndex(backend_->findData(QStringLiteral("cuda")));
    }
    QDir(probe_dir_).removeRecursively();
    probe_->deleteLater();
    probe_ = nullptr;
  });
  probe_->start(
      LaunchCommand{agent,
                    {QStringLiteral("--backend"), QStringLiteral("cuda"),
                     QStringLiteral("--world-size"), QStringLiteral("1"), QStringLiteral("--steps"),
                     QStringLiteral("1"), QStringLiteral("--out"), probe_dir_}},
      probe_dir_);
  QTimer::singleShot(kProbeTimeoutMs, probe_, [p = probe_] { p->cancel(); });
}

}  // namespace ddpscope::ui
