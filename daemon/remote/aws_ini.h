// aws_ini.h — the AWS shared credentials and config files (~/.aws/credentials, ~/.aws/config), read as botocore reads
// them (Python's configparser, botocore/configloader.py: raw_config_parse).
//
// Format: "[section]" headers; "name = value" or "name: value" lines (the name lower-cased, both sides trimmed); lines
// starting with '#' or ';' are comments; an indented line after "name =" continues it (the nested "s3 =" tables of
// the config file: kept out of the top level, as batchd reads top-level names only); a section or a name given twice
// in a file is an error, as configparser's strict mode makes it. Boost.PropertyTree's INI parser is not used: it
// refuses the nested tables (their names repeat within a section) and keeps names' case.
// Errors name the file and the line number, never a line's text (it may hold a secret): kNotFound for a missing
// file, kIo for one that cannot be read, kInvalidArgument for a malformed line. Pure apart from reading the file.
#pragma once

#include <map>
#include <string>

#include "batchd/result.h"

namespace batchd::daemon::remote {

// section name -> (name -> value). Sections as written ("profile dev", "default").
using IniSections = std::map<std::string, std::map<std::string, std::string>>;

Result<IniSections> read_aws_ini(const std::string& path);

// Parses text as read_aws_ini does (`path` only names the file in errors).
Result<IniSections> parse_aws_ini(const std::string& text, const std::string& path);

}  // namespace batchd::daemon::remote
