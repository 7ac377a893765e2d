#include "remote/s3_xml.h"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cctype>
#include <charconv>
#include <sstream>

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
    if (ec != std::errc() || end != size.data() + size.size()) return bad("the Size of " + k.key + " is not a number");
    k.etag = child.get<std::string>("ETag", "");
    page.keys.push_back(std::move(k));
  }
  if (page.truncated && page.next_token.empty()) return bad("IsTruncated without a NextContinuationToken");
  return page;
}

std::string s3_error_summary(const std::string& xml) {
  pt::ptree tree;
  if (xml.empty() || !read(xml, &tree)) return "";
  const std::string code = tree.get<std::string>("Error.Code", "");
  const std::string message = tree.get<std::string>("Error.Message", "");
  if (code.empty()) return "";
  return message.empty() ? code : code + ": " + message;
}

}  // namespace batchd::daemon::remote
