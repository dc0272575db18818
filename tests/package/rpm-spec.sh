#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ptsguard.spec: rpmspec parses it, its Version is meson's, and rpmbuild -bs
# makes a source RPM from a tarball of the tree that carries the spec's
# scriptlets and BuildRequires.
#
#   rpm-spec.sh SOURCE-ROOT MESON-VERSION
set -euo pipefail

src=$1
version=$2
for tool in rpmspec rpmbuild tar; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT

rpmspec --parse "$src/ptsguard.spec" >"$top/parsed"
spec_version=$(rpmspec -q --srpm --qf '%{VERSION}' "$src/ptsguard.spec")
[[ "$spec_version" == "$version" ]] || { echo "FAIL: ptsguard.spec has Version $spec_version, meson.build $version"; exit 1; }
echo "ok: rpmspec --parse; Version $spec_version is meson's"
for want in '%systemd_post ptsguard.service' '%systemd_preun ptsguard.service' \
	'%systemd_postun_with_restart ptsguard.service' '%config(noreplace) /etc/ptsguard/ptsguard.conf' \
	'/usr/lib/dracut/modules.d/95ptsguard/module-setup.sh'; do
	grep -qF -- "$want" "$top/parsed" || { echo "FAIL: the parsed spec lacks $want"; exit 1; }
done
echo "ok: scriptlets, conffile and dracut module in the parsed spec"

mkdir -p "$top/SOURCES" "$top/ptsguard-$version"
(cd "$src" && find . -path ./.git -prune -o -path './build*' -prune -o -type f -print |
	grep -v -e '^./obj-' -e '^./debian/ptsguard/' | tar -cf - -T -) | tar -xf - -C "$top/ptsguard-$version"
tar -C "$top" -czf "$top/SOURCES/ptsguard-$version.tar.gz" "ptsguard-$version"
rpmbuild -bs --define "_topdir $top" "$src/ptsguard.spec"
srpm=$(ls "$top"/SRPMS/ptsguard-"$version"-*.src.rpm)
reqs=$(rpm -qp --requires "$srpm")
for want in meson 'pkgconfig(libsystemd)' 'pkgconfig(json-c)' 'pkgconfig(libeconf)' systemd-rpm-macros; do
	grep -qxF -- "$want" <<<"$reqs" || { echo "FAIL: $srpm does not BuildRequire $want"; echo "$reqs"; exit 1; }
done
echo "ok: rpmbuild -bs: $(basename "$srpm") with its BuildRequires"
