#include "remote/aws_settings.h"

#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "remote/aws_ini.h"
#include "remote/curl_handle.h"
#include "remote/remote_url.h"

namespace batchd::daemon::remote {
namespace {

using Section = std::map<std::string, std::string>;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string expand_home(const std::string& path) {
  if (path.size() >= 2 && path[0] == '~' && path[1] == '/') return env("HOME") + path.substr(1);
  return path;
}

// "AKIA...WXYZ": never more of a key id than its first and last 4 characters.
std::string masked(const std::string& key_id) {
  if (key_id.size() < 12) return "****";
  return key_id.substr(0, 4) + "..." + key_id.substr(key_id.size() - 4);
}

struct Found {
  std::string value, from;
};

// The first candidate with a value (the last one always has one).
Found first_set(std::initializer_list<Found> candidates) {
  for (const Found& f : candidates) {
    if (!f.value.empty()) return f;
  }
  return {};
}

constexpr const char* kDefaultProfile = "the default profile";

Error invalid(const std::string& text) { return Error(ErrorCode::kInvalidArgument, text); }

// A shared file at `path`, named by the variable `var` when it is set (explicit), else the default (optional).
// Absent: empty. Unreadable (EACCES, EISDIR...): an error naming the variable when explicit; when optional, empty
// and a line in *warnings naming the file (botocore would fail, but the file is only read for defaults). A
// malformed file is an error either way.
Result<IniSections> read_shared(const std::string& path, const char* var, std::string* warnings) {
  auto ini = read_aws_ini(path);
  if (ini.ok() || ini.error().code() == ErrorCode::kNotFound) return ini.ok() ? ini : IniSections{};
  if (ini.error().code() == ErrorCode::kInvalidArgument) return ini;
  if (!env(var).empty()) {
    return Error(ini.error().code(), var + std::string(" names a file the daemon cannot read (") +
                                         ini.error().message() + "): make it readable by the daemon's user (uid " +
                                         std::to_string(::geteuid()) + "), or unset " + var);
  }
  *warnings += (warnings->empty() ? "" : "; ") + std::string("the optional AWS file ") + path + " is ignored, as if " +
               "absent: " + ini.error().message() + " (make it readable by the daemon's user, uid " +
               std::to_string(::geteuid()) + ", or set " + var + " to a readable file)";
  return IniSections{};
}

const Section* find(const IniSections& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

// The profile's section of the config file: "[profile NAME]", or "[default]" for the default profile.
const Section* config_section(const IniSections& config, const std::string& profile) {
  if (const Section* s = find(config, "profile " + profile)) return s;
  return profile == "default" ? find(config, "default") : nullptr;
}

std::string value(const Section* s, const std::string& name) {
  if (s == nullptr) return "";
  auto it = s->find(name);
  return it == s->end() ? "" : it->second;
}

// Static keys from one section; nullopt if it has neither key. `where` names the file and profile in errors.
Result<std::optional<AwsCredentials>> keys_of(const Section* s, const std::string& where) {
  AwsCredentials c{value(s, "aws_access_key_id"), value(s, "aws_secret_access_key"), value(s, "aws_session_token")};
  if (c.access_key_id.empty() && c.secret_access_key.empty()) {
    for (const char* other : {"role_arn", "credential_process", "sso_start_url", "sso_session"}) {
      if (!value(s, other).empty()) {
        return invalid(where + " uses " + other + ", which batchd does not run: export temporary credentials "
                       "(aws configure export-credentials --format env) to the daemon's environment or a "
                       "credentials file");
      }
    }
    return std::optional<AwsCredentials>();
  }
  if (c.access_key_id.empty()) return invalid(where + " has aws_secret_access_key but no aws_access_key_id");
  if (c.secret_access_key.empty()) return invalid(where + " has aws_access_key_id but no aws_secret_access_key");
  return std::optional<AwsCredentials>(c);
}

std::string describe_credentials(const AwsCredentials& c, const std::string& from) {
  if (c.empty()) return "credentials: none (requests unsigned)";
  return "credentials from " + from + " (" + masked(c.access_key_id) + (c.session_token.empty() ? "" : ", session token") +
         ")";
}

Result<std::string> checked_endpoint(std::string url, const std::string& from) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  CurlUrl u;
  const bool parsed = u.get() != nullptr && curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) == CURLUE_OK;
  const std::string scheme = parsed ? u.part(CURLUPART_SCHEME) : "";
  if (!parsed || (scheme != "http" && scheme != "https") || !u.part(CURLUPART_USER).empty() ||
      !u.part(CURLUPART_QUERY).empty() || !u.part(CURLUPART_FRAGMENT).empty()) {
    return invalid("the S3 endpoint " + redact(url) + " (from " + from + ") is not http(s)://HOST[:PORT][/PATH] "
                   "without credentials, query or fragment");
  }
  return url;
}

// Where credentials are looked for, resolved once.
struct Lookup {
  std::string key;  // the dataset's config table, for errors
  std::string profile, profile_from, creds_path, config_path;
  const Section* config_profile = nullptr;
};

struct FoundCredentials {
  AwsCredentials credentials;
  std::string from;
};

Result<FoundCredentials> from_credentials_file(const AwsOverrides& overrides, const Lookup& at) {
  const std::string where = overrides.credentials_file + " (" + at.key + ".credentials_file)";
  auto file = read_aws_ini(expand_home(overrides.credentials_file));
  if (!file.ok()) return file.error().with_context(at.key + ".credentials_file");
  const std::string section = overrides.profile.empty() ? "default" : overrides.profile;
  const Section* s = find(*file, section);
  if (s == nullptr) return invalid(where + " has no profile [" + section + "]: add it, or set " + at.key + ".profile");
  auto keys = keys_of(s, where + ", profile [" + section + "]");
  if (!keys.ok()) return keys.error();
  if (!keys->has_value()) return invalid(where + ", profile [" + section + "] has no aws_access_key_id");
  return FoundCredentials{**keys, overrides.credentials_file + " [" + section + "]"};
}

Result<FoundCredentials> from_env() {
  if (env("AWS_ACCESS_KEY_ID").empty()) return invalid("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
  if (env("AWS_SECRET_ACCESS_KEY").empty()) return invalid("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  return FoundCredentials{{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")},
                          "env AWS_ACCESS_KEY_ID"};
}

// The shared credentials file's [PROFILE], then the config file's [profile PROFILE]; none: anonymous, unless the
// profile was named (then it must exist in one of them).
Result<FoundCredentials> from_shared_files(const Lookup& at, std::string* warnings) {
  auto creds = read_shared(at.creds_path, "AWS_SHARED_CREDENTIALS_FILE", warnings);
  if (!creds.ok()) return creds.error();
  const Section* in_creds = find(*creds, at.profile);
  if (in_creds == nullptr && at.config_profile == nullptr && at.profile_from != kDefaultProfile) {
    return invalid("the profile " + at.profile + " (from " + at.profile_from + ") is in neither " + at.creds_path +
                   " nor " + at.config_path + ": add it, or name another profile");
  }
  auto keys = keys_of(in_creds, at.creds_path + ", profile [" + at.profile + "]");
  if (!keys.ok()) return keys.error();
  if (keys->has_value()) return FoundCredentials{**keys, at.creds_path + " [" + at.profile + "]"};
  keys = keys_of(at.config_profile, at.config_path + ", profile " + at.profile);
  if (!keys.ok()) return keys.error();
  if (keys->has_value()) return FoundCredentials{**keys, at.config_path + " [profile " + at.profile + "]"};
  return FoundCredentials{};
}

}  // namespace

Result<AwsSettings> resolve_aws_settings(const AwsOverrides& overrides, const std::string& key) {
  Lookup at;
  at.key = key;
  const Found profile = first_set({{overrides.profile, key + ".profile"},
                                   {env("AWS_PROFILE"), "AWS_PROFILE"},
                                   {"default", kDefaultProfile}});
  at.profile = profile.value;
  at.profile_from = profile.from;
  at.creds_path = expand_home(first_set({{env("AWS_SHARED_CREDENTIALS_FILE"), ""}, {"~/.aws/credentials", ""}}).value);
  at.config_path = expand_home(first_set({{env("AWS_CONFIG_FILE"), ""}, {"~/.aws/config", ""}}).value);
  std::string warnings;
  auto config = read_shared(at.config_path, "AWS_CONFIG_FILE", &warnings);
  if (!config.ok()) return config.error();
  at.config_profile = config_section(*config, at.profile);

  Result<FoundCredentials> found = FoundCredentials{};
  if (!overrides.credentials_file.empty()) {
    found = from_credentials_file(overrides, at);
  } else if (overrides.profile.empty() &&
             (!env("AWS_ACCESS_KEY_ID").empty() || !env("AWS_SECRET_ACCESS_KEY").empty())) {
    found = from_env();
  } else {
    found = from_shared_files(at, &warnings);
  }
  if (!found.ok()) return found.error();
  AwsSettings out;
  out.credentials = found->credentials;
  out.warnings = warnings;

  const Found region = first_set({{overrides.region, key + ".region"},
                                   {env("AWS_REGION"), "AWS_REGION"},
                                   {env("AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION"},
                                   {value(at.config_profile, "region"), at.config_path + " [" + at.profile + "]"},
                                   {"us-east-1", "default"}});
  out.region = region.value;
  const Found endpoint = first_set({{overrides.endpoint_url, key + ".endpoint_url"},
                                    {env("AWS_ENDPOINT_URL_S3"), "AWS_ENDPOINT_URL_S3"},
                                    {env("AWS_ENDPOINT_URL"), "AWS_ENDPOINT_URL"},
                                    {value(at.config_profile, "endpoint_url"), at.config_path + " [" + at.profile + "]"},
                                    {"https://s3." + out.region + ".amazonaws.com", "the region"}});
  auto checked = checked_endpoint(endpoint.value, endpoint.from);
  if (!checked.ok()) return checked.error().with_context(key);
  out.endpoint_url = *checked;

  out.source = describe_credentials(out.credentials, found->from) + "; region " + out.region + " (" + region.from +
               "); endpoint " + out.endpoint_url + " (" + endpoint.from + ")";
  return out;
}

Result<AwsSettings> resolve_aws_settings_for(const std::vector<std::string>& shard_urls, const AwsOverrides& overrides,
                                             const std::string& key) {
  for (const std::string& url : shard_urls) {
    if (url.rfind("s3://", 0) == 0) return resolve_aws_settings(overrides, key);
  }
  AwsSettings none;
  none.source = "no s3:// shard: AWS settings not read";
  return none;
}

}  // namespace batchd::daemon::remote
