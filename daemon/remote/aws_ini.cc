#include "remote/aws_ini.h"

#include <cerrno>
#include <fstream>
#include <sstream>

namespace batchd::daemon::remote {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

}  // namespace

Result<IniSections> parse_aws_ini(const std::string& text, const std::string& path) {
  IniSections out;
  std::map<std::string, std::string>* section = nullptr;
  bool in_value = false;  // the previous line was "name = ...": an indented line continues it
  std::istringstream lines(text);
  std::string raw;
  for (int line_no = 1; std::getline(lines, raw); ++line_no) {
    const std::string line = trim(raw);
    auto bad = [&](const std::string& what) {
      return Error(ErrorCode::kInvalidArgument, path + ":" + std::to_string(line_no) + ": " + what +
                                                    " (the AWS shared credentials/config file format: "
                                                    "[section] then name = value lines)");
    };
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if ((raw[0] == ' ' || raw[0] == '\t') && in_value) continue;  // a nested table's line
    in_value = false;
    if (line[0] == '[') {
      if (line.back() != ']') return bad("a section header without its closing ']'");
      const std::string name = trim(line.substr(1, line.size() - 2));
      if (out.count(name) != 0) return bad("section [" + name + "] given twice");
      section = &out[name];
      continue;
    }
    const size_t delim = line.find_first_of("=:");
    if (delim == std::string::npos || delim == 0) return bad("neither a [section] nor a name = value line");
    if (section == nullptr) return bad("a name = value line before the first [section]");
    const std::string name = lower(trim(line.substr(0, delim)));
    if (section->count(name) != 0) return bad("'" + name + "' given twice in its section");
    (*section)[name] = trim(line.substr(delim + 1));
    in_value = true;
  }
  return out;
}

Result<IniSections> read_aws_ini(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return posix_error("cannot open " + path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return posix_error("cannot read " + path, errno);
  return parse_aws_ini(text.str(), path);
}

}  // namespace batchd::daemon::remote
