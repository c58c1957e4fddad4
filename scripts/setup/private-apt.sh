# Sourced, not run: `private_apt DIR SUITE` points the array APT at a private apt configuration
# under DIR/apt (one Debian suite's sources list, an empty dpkg status, its own package lists
# and cache), so that apt-get and apt-cache run with "${APT[@]}" can see and download
# packages of another suite without touching the machine's sources or package database, and
# refreshes its lists. Downloads run as the caller (APT::Sandbox::User), since _apt may not
# reach DIR.
private_apt() {
  local dir=$1 suite=$2
  local a=$dir/apt
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
  echo "deb http://deb.debian.org/debian $suite main" > "$a/sources.list"
  [ -e "$a/status" ] || : > "$a/status"
  APT=(-o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$a/lists" -o Dir::State::Status="$a/status" -o Dir::Cache="$a/cache"
    -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
    -o APT::Sandbox::User=root)
  echo "private-apt: apt-get update ($suite only, private lists in $a)" >&2
  apt-get "${APT[@]}" update -qq >&2
}
