#!/bin/sh
# The one version string of a build, and the facts stamped beside it
# (cmd/acp-guard/version.go). make build, make release-snapshot (GoReleaser)
# and the npm packages all take it from here.
#
#   scripts/version.sh          the version: X.Y.Z at a tag vX.Y.Z; else the
#                               next patch after the latest such tag (v0.0.0
#                               when there is none) as a pre-release,
#                               X.Y.(Z+1)-dev.N.gSHA (N commits since the tag),
#                               with .dirty when tracked files differ from HEAD.
#                               Valid semver, so npm, deb, rpm and Homebrew
#                               take it as it is. After a pre-release tag
#                               vX.Y.Z-P: X.Y.Z-P.dev.N.gSHA.
#   scripts/version.sh commit   the full commit hash
#   scripts/version.sh date     the commit's time, UTC, RFC 3339 (not the
#                               build's: the same inputs give the same bytes)
#   scripts/version.sh timestamp  the same time in Unix seconds (file times
#                               in the release archives and packages)
#
# Outside a git checkout: 0.0.0-dev, and empty commit and date.
set -eu
cd "$(dirname "$0")/.."

if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
	[ "${1:-version}" = version ] && echo 0.0.0-dev
	exit 0
fi

case "${1:-version}" in
commit)
	git rev-parse HEAD
	exit 0
	;;
date)
	TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD
	exit 0
	;;
timestamp)
	git log -1 --format=%ct HEAD
	exit 0
	;;
version) ;;
*)
	echo "usage: $0 [version|commit|date|timestamp]" >&2
	exit 2
	;;
esac

dirty=
git update-index -q --refresh >/dev/null 2>&1 || true
git diff-index --quiet HEAD -- || dirty=.dirty

tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD 2>/dev/null || true)
if [ -n "$tag" ]; then
	base=${tag#v}
	n=$(git rev-list --count "$tag..HEAD")
else
	base=0.0.0
	n=$(git rev-list --count HEAD)
fi
if [ "$n" = 0 ] && [ -z "$dirty" ]; then
	echo "$base"
	exit 0
fi
sha=$(git rev-parse --short=12 HEAD)
case "$base" in
*-*) # after a pre-release tag (v1.0.0-rc.1): 1.0.0-rc.1.dev.N.gSHA
	echo "$base.dev.$n.g$sha$dirty"
	;;
*)
	major=${base%%.*}
	rest=${base#*.}
	minor=${rest%%.*}
	patch=${rest#*.}
	echo "$major.$minor.$((patch + 1))-dev.$n.g$sha$dirty"
	;;
esac
