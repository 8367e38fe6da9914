#include "kineto_importer.h"

#include "file_io.h"

namespace ddpscope::trace {

namespace {

class KinetoImporter final : public Importer {
 public:
  std::string_view name() const override { return "Kineto / Chrome trace JSON"; }
  std::vector<std::string> extensions() const override { return {".json", ".json.gz"}; }
  // gzip (the reader inflates it and says so if it holds no JSON), or a JSON document: an
  // object or an array, after optional whitespace and a UTF-8 byte order mark.
  bool sniff(std::string_view head, std::string_view) const override {
    if (isGzip(head)) return true;
    if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
    for (const char c : head) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      return c == '{' || c == '[';
    }
    return false;
  }
  std::vector<ImportedRank> read(const std::string& path,
                                 const ReadOptions& options) const override {
    std::vector<ImportedRank> out(1);
    out.front().trace = readTraceFile(path, options);
    out.front().origin = RankOrigin::Declared;
    return out;
  }
};

}  // namespace

std::shared_ptr<const Importer> makeKinetoImporter() {
  return std::make_shared<KinetoImporter>();
}

}  // namespace ddpscope::trace
