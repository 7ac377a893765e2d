// file_trust.h — whether a file or directory the daemon relies on (its index cache, the socket's lock file) is the
// daemon's own: owned by its effective uid and writable by no one else. Anything else may have been planted or
// changed by another local user (a cache_dir of mode 1777, a socket directory others can write), so the daemon
// must neither trust what it reads there nor write through it.
//
// The checks take a stat of the file (fstat of an fd opened with O_NOFOLLOW, or stat of a configured directory) and
// return "" if it is the daemon's, else the reason for a message: "<what> is owned by uid 65534 (nobody), not by
// the daemon's uid 0 (root)" or "<what> is writable by others (mode 1777)". Callers add the fix. Thread-safe (reads
// the process's ids and the password database only).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace batchd::daemon {

// "uid 65534 (nobody)", or "uid 4242" where the password database has no name for it.
std::string describe_uid(uid_t uid);

// "" if `st` is owned by the daemon's effective uid and neither group- nor other-writable, else why not (naming
// `what`, its owner or its mode). `own_group_may_write`: a directory writable by the daemon's own primary group (a
// systemd CacheDirectory= with a group of its own) is accepted.
std::string why_not_the_daemons(const std::string& what, const struct stat& st, bool own_group_may_write = false);

// "" if no component of `path` is a symbolic link owned by someone other than root or the daemon's effective uid
// (the targets of the links it does follow are checked the same way, at most 40 deep), else why not, naming `what`,
// the link and its owner. A link another user made (in a sticky /tmp: fs.protected_symlinks only guards links the
// daemon does not own the directory of) would send the daemon's writes wherever that user chose.
std::string foreign_symlink_in(const std::string& what, const std::string& path);

}  // namespace batchd::daemon
