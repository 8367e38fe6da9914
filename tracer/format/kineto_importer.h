#pragma once
// Chrome-trace / Kineto JSON (and ddpscope's own files) as an Importer: a thin wrapper around
// readTraceFile (trace_reader.h).

#include <memory>

#include "importer.h"

namespace ddpscope::trace {

std::shared_ptr<const Importer> makeKinetoImporter();

}  // namespace ddpscope::trace
