// The keys of a trace document besides its events: baseTimeNanoseconds, distributedInfo (rank,
// world size, backend), deviceProperties, and the "ddpscope" block our own files carry
// (docs/FORMAT.md): the producer's settings, its clock, the gradient buckets.
#include <set>

#include "trace_json_values.h"
#include "trace_parser.h"

namespace ddpscope::trace::reader {

void TraceParser::parseTopLevel(od::object top) {
  for (od::field field : top) {
    const auto key = keyOf(field);
    od::value v = field.value();
    if (key == "traceEvents") {
      if (v.type() != od::json_type::array) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "\"traceEvents\" must be an array of events");
      }
      if (saw_events_) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "duplicate \"traceEvents\" array");
      }
      parseEvents(v.get_array());
      event_offset_ = kNoOffset;
    } else if (key == "baseTimeNanoseconds") {
      // Any integer: events before the base make it negative when written back.
      const auto at = locationOf(v);
      std::int64_t base = 0;
      if (!intFrom(v, base)) {
        throw TraceError(name_, at,
                         "\"baseTimeNanoseconds\" must be an integer (ns since the epoch)");
      }
      out_.base_time_ns = base;
    } else if (key == "schemaVersion") {
      std::int64_t s = 1;
      if (intFrom(v, s)) out_.schema_version = s;
    } else if (key == "deviceProperties") {
      if (v.type() == od::json_type::array) out_.device_properties_json = rawJson(v);
    } else if (key == "distributedInfo") {
      if (v.type() == od::json_type::object) parseDistributedInfo(v.get_object());
    } else if (key == "ddpscope") {
      if (v.type() != od::json_type::object) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "the \"ddpscope\" block must be an object");
      }
      if (out_.ddpscope.present) {
        out_.warnings.push_back("the \"ddpscope\" block appears twice; the last one was used");
        out_.ddpscope = DdpscopeBlock{};
      }
      parseDdpscopeBlock(v.get_object());
    }
    // Anything else (INFO, traceName, displayTimeUnit, ...) is ignored.
  }
}

void TraceParser::parseDistributedInfo(od::object info) {
  for (od::field field : info) {
    const auto key = keyOf(field);
    od::value v = field.value();
    const auto at = locationOf(v);
    std::int64_t n = 0;
    if (key == "rank" && intFrom(v, n)) {
      if (n < 0 || n > 1'000'000) {
        throw TraceError(
            name_, at,
            "distributedInfo.rank out of range (" + std::to_string(n) + "; 0 to 1000000)");
      }
      out_.rank = static_cast<std::int32_t>(n);
      saw_rank_ = true;
    } else if (key == "world_size" && intFrom(v, n)) {
      if (n < 1 || n > 1'000'000) {
        throw TraceError(
            name_, at,
            "distributedInfo.world_size out of range (" + std::to_string(n) + "; 1 to 1000000)");
      }
      out_.world_size = static_cast<std::int32_t>(n);
      saw_world_size_ = true;
    } else if (key == "backend" && v.type() == od::json_type::string) {
      out_.distributed_backend = std::string(v.get_string().value());
    }
  }
}

void TraceParser::parseDdpscopeBlock(od::object block) {
  auto& b = out_.ddpscope;
  b.present = true;
  for (od::field field : block) {
    const auto key = keyOf(field);
    od::value v = field.value();
    if (key == "version") {
      intFrom(v, b.version);
    } else if (key == "source" && v.type() == od::json_type::string) {
      b.source = std::string(v.get_string().value());
    } else if ((key == "config" || key == "clock") && v.type() == od::json_type::object) {
      auto& dest = key == "config" ? b.config : b.clock;
      for (od::field kv : v.get_object()) {
        std::string k(kv.unescaped_key().value());
        dest.emplace_back(std::move(k), rawJson(kv.value()));
      }
    } else if (key == "incomplete" && v.type() == od::json_type::boolean) {
      b.incomplete = v.get_bool().value();
    } else if (key == "dropped_records") {
      std::int64_t n = 0;
      if (intFrom(v, n)) {
        if (n < 0) {
          out_.warnings.push_back("ddpscope.dropped_records " + std::to_string(n) +
                                  " is negative; taken as 0");
          n = 0;
        }
        b.dropped_records = n;
      }
    } else if (key == "buckets" && v.type() == od::json_type::array) {
      // A bucket with an impossible id or size is left out (one warning for all of them).
      std::size_t index = 0, ignored = 0;
      std::string first_problem;
      for (auto item : v.get_array()) {
        od::value bv = item.value();
        const auto at = locationOf(bv);
        if (bv.type() != od::json_type::object) {
          throw TraceError(name_, at, "ddpscope.buckets entries must be objects");
        }
        BucketDef def;
        std::string problem;
        for (od::field bf : bv.get_object()) {
          const auto bk = keyOf(bf);
          od::value x = bf.value();
          std::int64_t n = 0;
          if (bk == "id" && intFrom(x, n)) {
            if (n >= 0 && n < kMaxId) {
              def.id = static_cast<std::int32_t>(n);
            } else if (problem.empty()) {
              problem = "id " + std::to_string(n) + " is out of range (0 to " +
                        std::to_string(kMaxId - 1) + ")";
            }
          } else if (bk == "bytes" && intFrom(x, n)) {
            if (n >= 0) {
              def.bytes = n;
            } else if (problem.empty()) {
              problem = "bytes " + std::to_string(n) + " is negative";
            }
          } else if (bk == "dtype" && x.type() == od::json_type::string) {
            def.dtype = std::string(x.get_string().value());
          } else if (bk == "params" && x.type() == od::json_type::array) {
            for (auto p : x.get_array()) {
              od::value pv = p.value();
              if (pv.type() != od::json_type::object) continue;
              BucketParam param;
              for (od::field pf : pv.get_object()) {
                const auto pk = keyOf(pf);
                od::value y = pf.value();
                if (pk == "name" && y.type() == od::json_type::string) {
                  param.name = std::string(y.get_string().value());
                } else if (pk == "bytes") {
                  intFrom(y, param.bytes);
                }
              }
              def.params.push_back(std::move(param));
            }
          }
        }
        if (problem.empty()) {
          b.buckets.push_back(std::move(def));
        } else if (ignored++ == 0) {
          first_problem = "ddpscope.buckets[" + std::to_string(index) + "]: " + problem +
                          "; the bucket definition was ignored" +
                          (at != kNoOffset ? " (byte " + std::to_string(at) + ")" : "");
        }
        ++index;
      }
      if (ignored > 0) {
        out_.warnings.push_back(
            first_problem +
            (ignored > 1 ? " (and " + std::to_string(ignored - 1) + " more buckets like it)" : ""));
      }
      std::set<std::int32_t> ids;
      for (const auto& def : b.buckets) {
        if (!ids.insert(def.id).second) {
          out_.warnings.push_back("ddpscope.buckets: bucket id " + std::to_string(def.id) +
                                  " is defined more than once; the first definition is used");
          break;
        }
      }
    }
  }
  if (b.source.empty()) b.source = "imported";  // what the writer would say for it
}

}  // namespace ddpscope::trace::reader
