// aws_settings.h — credentials, region and endpoint for s3:// URLs, found the way the AWS CLI and SDKs find them.
//
// Credentials, first found wins:
//   1. the dataset's `credentials_file` (config key datasets.NAME.credentials_file: an AWS shared-credentials file,
//      profile datasets.NAME.profile or "default"); never the secret inline in batchd's config;
//   2. the environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   3. the shared files: AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials) then AWS_CONFIG_FILE (default
//      ~/.aws/config, sections "[profile NAME]", "[default]"), profile AWS_PROFILE (else "default");
//   none: requests are sent unsigned (public buckets, servers that do not check).
//   A dataset's `profile` without a credentials_file is an explicit profile, as botocore's Session(profile_name=...):
//   step 2 is skipped (env keys would otherwise win over the profile the config names). Only static keys are read
//   (aws_access_key_id, aws_secret_access_key, aws_session_token): a profile that has none but role_arn, sso_* or
//   credential_process is kInvalidArgument saying to export temporary credentials (`aws configure
//   export-credentials --format env`) instead. One of the two keys without the other is kInvalidArgument.
// Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region` in the config file, else "us-east-1".
// Endpoint: datasets.NAME.endpoint_url, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`, else
// "https://s3.REGION.amazonaws.com". Requests use path-style addressing (ENDPOINT/BUCKET/KEY).
// A profile named but absent, or a credentials file that lacks a key, is kInvalidArgument naming the file, the
// profile and the missing key — never a value. A file that cannot be read (EACCES): the dataset's credentials_file,
// or a file AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE names, is an error naming it and the variable; the
// default ~/.aws/credentials and ~/.aws/config are optional: skipped as if absent, with a line in `warnings` naming
// the file (the dataset's summary carries it to the log and batchctl). A malformed file is an error either way.
// The files' format: remote/aws_ini.h. `describe()` says where each came from, without secrets
// ("credentials from env AWS_ACCESS_KEY_ID (AKIA...WXYZ)": the key id's first 4 and last 4 characters only).
// The environment and files are read once, at dataset load (on the loader's thread). Thread-compatible values.
#pragma once

#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon::remote {

struct AwsCredentials {
  std::string access_key_id, secret_access_key, session_token;  // empty key id: anonymous
  bool empty() const { return access_key_id.empty(); }
};

struct AwsSettings {
  AwsCredentials credentials;
  std::string region = "us-east-1";
  std::string endpoint_url;  // scheme://host[:port][/path], no trailing '/'
  std::string source;        // describe(): where each part came from, no secret
  std::string warnings;      // what was skipped ("~/.aws/config cannot be read (...): ignored"); "" if nothing
  std::string describe() const { return source; }
};

// Per dataset, from its config (all optional).
struct AwsOverrides {
  std::string credentials_file, profile, endpoint_url, region;
};

// Reads the environment (getenv) and the files above. `key` names the dataset's config table in errors.
Result<AwsSettings> resolve_aws_settings(const AwsOverrides& overrides, const std::string& key);

// What a dataset whose shards are `shard_urls` needs: resolve_aws_settings() when one of them is s3://; else (only
// http(s):// URLs, fetched as they are) AwsSettings{} at once, without reading the environment or any file.
Result<AwsSettings> resolve_aws_settings_for(const std::vector<std::string>& shard_urls, const AwsOverrides& overrides,
                                             const std::string& key);

}  // namespace batchd::daemon::remote
