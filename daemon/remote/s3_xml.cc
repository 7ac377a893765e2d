#include "remote/s3_xml.h"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cctype>
#include <charconv>
#include <sstream>
#include <string_view>

#include "batchd/wire/printable.h"
#include "batchd/wire/utf8.h"

namespace batchd::daemon::remote {
namespace {

namespace pt = boost::property_tree;

// The %XX and '+' of a key S3 sent with encoding-type=url (application/x-www-form-urlencoded, as botocore's
// unquote_plus reads it).
std::string url_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Whether `xml` nests elements more than `limit` levels deep, counted in one loop (no recursion) that stops as soon
// as it passes the limit. It reads markup as RapidXML (under read_xml) does, never less deep: comments,
// CDATA, processing instructions and <!...> declarations (a DOCTYPE's [internal subset] included) open no element,
// nor does '<' or '>' inside a quoted attribute value; a self-closed element (<a/>) does not nest; any "</" closes
// one level (RapidXML does not match closing names either). Where the text is malformed, RapidXML stops there.
bool deeper_than(std::string_view xml, size_t limit) {
  constexpr size_t npos = std::string_view::npos;
  size_t depth = 0, i = 0;
  const auto at = [&](std::string_view s) { return xml.compare(i, s.size(), s) == 0; };
  const auto skip_past = [&](std::string_view end) {
    const size_t e = xml.find(end, i);
    i = e == npos ? xml.size() : e + end.size();
  };
  while ((i = xml.find('<', i)) != npos) {
    if (at("<!--")) {
      i += 4;
      skip_past("-->");
    } else if (at("<![CDATA[")) {
      i += 9;
      skip_past("]]>");
    } else if (at("<?")) {
      i += 2;
      skip_past("?>");
    } else if (at("<!")) {
      size_t brackets = 0;
      for (i += 2; i < xml.size() && (xml[i] != '>' || brackets > 0); ++i) {
        if (xml[i] == '[') ++brackets;
        if (xml[i] == ']' && brackets > 0) --brackets;
      }
      ++i;
    } else if (at("</")) {
      if (depth > 0) --depth;
      i += 2;
      skip_past(">");
    } else {  // a start tag, to its '>' outside quotes
      char quote = 0;
      bool self_closed = false;
      for (++i; i < xml.size(); ++i) {
        const char c = xml[i];
        if (quote != 0) {
          if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == '>') {
          self_closed = xml[i - 1] == '/';
          ++i;
          break;
        }
      }
      if (!self_closed && ++depth > limit) return true;
    }
  }
  return false;
}

// Why `xml` is not parsed ("" if it may be): longer than kMaxS3XmlBytes or nested deeper than kMaxS3XmlDepth.
std::string out_of_bounds(const std::string& xml) {
  if (xml.size() > kMaxS3XmlBytes) {
    return "longer than " + std::to_string(kMaxS3XmlBytes >> 20) + " MiB, where 1000 keys take under 4 MiB";
  }
  if (deeper_than(xml, kMaxS3XmlDepth)) {
    return "elements nested deeper than " + std::to_string(kMaxS3XmlDepth) + " levels, where S3's answers nest 4";
  }
  return "";
}

// Parses `xml` (checked by out_of_bounds first: RapidXML recurses once per level).
bool read(const std::string& xml, pt::ptree* tree) {
  std::istringstream in(xml);
  try {
    pt::read_xml(in, *tree);
  } catch (const pt::xml_parser_error&) {
    return false;
  }
  return true;
}

}  // namespace

Result<ListPage> parse_list_page(const std::string& xml, const std::string& shown_url) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorCode::kDataError, "the listing of " + shown_url + " is not S3's ListObjectsV2 answer (" + what +
                                            "): is the endpoint an S3 server?");
  };
  if (const std::string why = out_of_bounds(xml); !why.empty()) return bad(why);
  pt::ptree tree;
  if (!read(xml, &tree)) return bad("not XML");
  auto root = tree.get_child_optional("ListBucketResult");
  if (!root) return bad("no ListBucketResult");
  ListPage page;
  const bool url_encoded = root->get<std::string>("EncodingType", "") == "url";
  page.truncated = root->get<std::string>("IsTruncated", "false") == "true";
  page.next_token = root->get<std::string>("NextContinuationToken", "");
  for (const auto& [name, child] : *root) {
    if (name != "Contents") continue;
    ListedKey k;
    k.key = child.get<std::string>("Key", "");
    if (url_encoded) k.key = url_decode(k.key);
    const std::string size = child.get<std::string>("Size", "");
    const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), k.size);
    if (ec != std::errc() || end != size.data() + size.size()) {
      return bad("the Size of " + wire::printable(k.key) + " is not a number");
    }
    k.etag = child.get<std::string>("ETag", "");
    page.keys.push_back(std::move(k));
  }
  if (page.truncated && page.next_token.empty()) return bad("IsTruncated without a NextContinuationToken");
  return page;
}

std::string s3_error_summary(const std::string& xml) {
  pt::ptree tree;
  if (xml.empty() || !out_of_bounds(xml).empty() || !read(xml, &tree)) return "";
  // The server's words, escaped and cut: they reach errors, the log and batchctl.
  const std::string code = wire::bounded_utf8(wire::printable(tree.get<std::string>("Error.Code", "")), 128);
  const std::string message = wire::bounded_utf8(wire::printable(tree.get<std::string>("Error.Message", "")), 512);
  if (code.empty()) return "";
  return message.empty() ? code : code + ": " + message;
}

}  // namespace batchd::daemon::remote
