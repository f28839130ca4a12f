# The Debian packages kreg's demo and tests need, installed when missing. Sourced by
# scripts/demo.sh (the demo's groups) and scripts/test.sh (those and the tests' groups).
#
# Nothing installed is ever removed or downgraded: every install is simulated first
# (`apt-get install -s`). When apt would remove or downgrade a package, the install is
# retried from the release that package's installed version came from (`-t RELEASE`): a
# release in the apt sources, or, for a Debian backport (`~bpoNN`) whose release is not in
# them, that release added to a sources list of kreg's own (under $KREG_CACHE_DIR/apt; the
# system's /etc/apt is left as it is). When no release fits, nothing is installed and the
# script stops with the conflict and the command that resolves it.
#
# Every apt and dpkg call honours APT_CONFIG (the test of this file runs it against a
# package root and a repository of its own).

# kreg_group LABEL PROBE:PACKAGE...
# One line saying what the group is for, then the packages whose probe fails, installed.
# A probe is a command on PATH, an absolute path (a glob is fine), or @NAME for the
# function kreg_has_NAME.
kreg_group() {
  local label=$1 entry probe pkg
  shift
  local missing=()
  for entry in "$@"; do
    probe=${entry%%:*}
    pkg=${entry#*:}
    kreg_present "$probe" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "kreg: $label: installed"
    return 0
  fi
  echo "kreg: $label: installing ${missing[*]}"
  kreg_apt_install "${missing[@]}"
}

kreg_present() {
  case $1 in
    @*) "kreg_has_${1#@}" ;;
    /*) compgen -G "$1" >/dev/null ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

kreg_has_initdb() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }
# The lab guest runs busybox without the host's libraries.
kreg_has_static_busybox() { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; }

# The packages' lists are refreshed once per script, before the first install.
KREG_APT_UPDATED=${KREG_APT_UPDATED:-}
kreg_apt_update_once() {
  [ -n "$KREG_APT_UPDATED" ] && return 0
  echo "kreg: refreshing the package lists (apt-get update)"
  apt-get update -q >/dev/null || apt-get update -q
  KREG_APT_UPDATED=1
}

# kreg_apt_install PACKAGE...: installs them, never removing or downgrading anything.
# With KREG_COMPONENT set (e.g. non-free), packages the system's sources lack come from
# that component through kreg's own sources.
kreg_apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  kreg_apt_update_once
  local opts=() sim harm release
  KREG_APT_PRIVATE=()
  if [ -n "${KREG_COMPONENT:-}" ]; then
    kreg_component_sources "$KREG_COMPONENT" "$@" || return 1
    opts=("${KREG_APT_PRIVATE[@]}")
  fi
  if sim=$(kreg_simulate "${opts[@]}" "$@"); then
    harm=$(kreg_harm <<<"$sim")
  else
    # apt found no plan: installed packages it names may be held by their newer version.
    harm=$(kreg_blockers <<<"$sim")
    if [ -z "$harm" ]; then
      kreg_apt_failed "$sim" "$@"
      return 1
    fi
  fi
  if [ -n "$harm" ]; then
    if ! kreg_fitting_release "$harm"; then
      kreg_conflict "$harm" "" "$@"
      return 1
    fi
    release=$KREG_FIT_RELEASE
    opts=("${KREG_APT_PRIVATE[@]}" -t "$release")
    if ! sim=$(kreg_simulate "${opts[@]}" "$@"); then
      kreg_apt_failed "$sim" "${opts[@]}" "$@"
      return 1
    fi
    if [ -n "$(kreg_harm <<<"$sim")" ]; then
      kreg_conflict "$(kreg_harm <<<"$sim")" "$release" "$@"
      return 1
    fi
    echo "kreg: installing ${*} from $release, the release of the installed $(kreg_harm_names "$harm") (apt would otherwise have removed or downgraded it)"
    if [ ${#KREG_APT_PRIVATE[@]} -gt 0 ]; then
      echo "kreg: $release is in kreg's own apt sources ($(kreg_apt_private_dir)); /etc/apt is unchanged"
    fi
  fi
  apt-get install -y -q --no-install-recommends "${opts[@]}" "$@"
}

# apt's plan for installing the packages (its simulation); fails with apt's output when
# apt has none.
kreg_simulate() {
  apt-get install -s -q --no-install-recommends "$@" 2>&1
}

kreg_apt_failed() {
  local out=$1
  shift
  echo "kreg: apt cannot install these (apt-get install $*); nothing was installed:" >&2
  echo "$out" | grep -E '^(E:|W:| )' >&2
}

# From apt's failed plan: the installed packages it names, as "PACKAGE VERSION blocks".
kreg_blockers() {
  local status pkg version
  eval "$(apt-config shell status Dir::State::status/f)"
  grep -E '^ +[^ ]+ : ' | grep -oE '(^ +[^ ]+ :|(Depends|Breaks|Conflicts|PreDepends): [^ ]+)' |
    sed -E 's/^ +//; s/ :$//; s/^[A-Za-z]+: //' | sort -u |
    while read -r pkg; do
      version=$(dpkg-query --admindir="$(dirname "$status")" -W -f '${db:Status-Abbrev} ${Version}' "$pkg" 2>/dev/null |
        awk '$1 ~ /^.i/ { print $2 }')
      [ -n "$version" ] && echo "$pkg $version blocks"
    done
  return 0
}

# From a simulation: "PACKAGE INSTALLED_VERSION removed|downgraded-to:VERSION", one a line.
kreg_harm() {
  local kind pkg old new
  while read -r kind pkg old new _; do
    old=${old#[}
    old=${old%]}
    case $kind in
      Remv) echo "$pkg $old removed" ;;
      Inst)
        # "Inst P [OLD] (NEW release [arch])" replaces OLD; without [OLD] it is new.
        [[ $old == \(* ]] && continue
        new=${new#(}
        if dpkg --compare-versions "$new" lt "$old"; then
          echo "$pkg $old downgraded-to:$new"
        fi
        ;;
    esac
  done < <(grep -E '^(Remv|Inst) ')
}

kreg_harm_names() {
  awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }' <<<"$1"
}

# KREG_FIT_RELEASE: the one release that offers the installed version of every harmed
# package (KREG_APT_PRIVATE: the options for kreg's own sources when they hold it); fails
# when there is none (or more than one).
kreg_fitting_release() {
  local harm=$1 pkg version rest found=() r
  while read -r pkg version rest; do
    r=$(kreg_release_of "$pkg" "$version")
    if [ -z "$r" ]; then
      kreg_backports_of "$pkg" "$version" || return 1
      r=$(kreg_release_of "$pkg" "$version")
    fi
    [ -n "$r" ] || return 1
    found+=("$r")
  done <<<"$harm"
  r=$(printf '%s\n' "${found[@]}" | sort -u)
  [ "$(wc -l <<<"$r")" -eq 1 ] || return 1
  KREG_FIT_RELEASE=$r
}

# The release (suite) in the apt sources (kreg's own included once made) that offers
# PACKAGE at VERSION.
kreg_release_of() {
  apt-cache "${KREG_APT_PRIVATE[@]}" policy "$1" 2>/dev/null | awk -v want="$2" '
    /^ (\*\*\*|   ) [^ ]+ -?[0-9]+$/ { v = ($1 == "***") ? $2 : $1; next }
    v == want && NF >= 3 && $2 !~ /^\// { split($3, s, "/"); print s[1]; exit }'
}

# A Debian backport (VERSION has ~bpoN) whose release is not in the apt sources: the
# backports suite of the release that offers PACKAGE now, added to kreg's own sources
# (its entry copied from the system's, with the suite changed); sets KREG_APT_PRIVATE.
kreg_backports_of() {
  local pkg=$1 version=$2 base entry dir
  [[ $version == *~bpo[0-9]* ]] || return 1
  base=$(apt-cache policy "$pkg" 2>/dev/null | awk '
    NF >= 3 && ($2 ~ /:\/\// || $2 ~ /^file:/) { split($3, s, "/"); if (s[1] !~ /-/) { print $2 " " s[1]; exit } }')
  [ -n "$base" ] || return 1
  entry=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(SOURCESENTRY)' 2>/dev/null |
    awk -v uri="${base% *}" -v rel="${base#* }" '{ u = $1; sub(/\/$/, "", u) } u == uri && $2 == rel { print $3; exit }')
  [ -n "$entry" ] || return 1
  dir=$(kreg_apt_private "${base#* }-backports" "$entry") || return 1
  KREG_APT_PRIVATE=(-o "Dir::Etc::SourceParts=$dir/sources.list.d" -o "Dir::State::Lists=$dir/lists")
  echo "kreg: ${base#* }-backports (where $pkg $version comes from) is not in the apt sources: fetching its lists into $dir" >&2
  apt-get "${KREG_APT_PRIVATE[@]}" update -q >/dev/null 2>&1 || {
    apt-get "${KREG_APT_PRIVATE[@]}" update -q >&2
    return 1
  }
}

kreg_apt_private_dir() { echo "${KREG_CACHE_DIR:-$HOME/.cache/kreg}/apt"; }

# kreg's own apt sources: a copy of the system's, and one entry written like the entry
# FILE:N (the N-th stanza of a .sources file, or line N of a .list file) with its suite set
# to SUITE and, when COMPONENTS is given, its components to those. Prints its directory.
# The copy is made afresh for each install (KREG_APT_PRIVATE empty); entries added during
# one install are kept together.
kreg_apt_private() {
  local suite=$1 entry=$2 components=${3:-} dir parts file n name
  dir=$(kreg_apt_private_dir)
  file=${entry%:*}
  n=${entry##*:}
  name=kreg-$suite${components:+-${components// /-}}
  if [ ${#KREG_APT_PRIVATE[@]} -eq 0 ]; then
    eval "$(apt-config shell parts Dir::Etc::SourceParts/d)"
    rm -rf "$dir/sources.list.d"
    mkdir -p "$dir/sources.list.d" "$dir/lists/partial"
    find "$parts" -maxdepth 1 \( -name '*.list' -o -name '*.sources' \) -exec cp {} "$dir/sources.list.d/" \;
  fi
  case $file in
    *.sources)
      awk -v n="$n" -v suite="$suite" -v comps="$components" '
        /^[[:space:]]*$/ { if (seen) stanza++; seen = 0; next }
        /^#/ { next }
        { seen = 1 }
        stanza + 1 == n {
          k = tolower($1)
          if (k == "suites:") print "Suites: " suite
          else if (k == "components:" && comps != "") print "Components: " comps
          else print
        }' "$file" >"$dir/sources.list.d/$name.sources"
      ;;
    *)
      awk -v n="$n" -v suite="$suite" -v comps="$components" 'NR == n {
        i = 2
        if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        $(i + 1) = suite
        if (comps != "") { NF = i + 1; $0 = $0 " " comps }
        print }' "$file" >"$dir/sources.list.d/$name.list"
      ;;
  esac
  [ -s "$dir/sources.list.d/$name.sources" ] || [ -s "$dir/sources.list.d/$name.list" ] || return 1
  echo "$dir"
}

# kreg_component_sources COMPONENT PACKAGE...: packages apt cannot find in the system's
# sources, from COMPONENT (e.g. non-free) of the system's Debian release, through kreg's
# own sources (the system's main entry copied with that component); /etc/apt is left as it
# is. Sets KREG_APT_PRIVATE; fails when the sources have no such release or it lacks them.
kreg_component_sources() {
  local component=$1 pkg missing=() found uri release entry dir
  shift
  for pkg in "$@"; do
    apt-cache "${KREG_APT_PRIVATE[@]}" policy "$pkg" 2>/dev/null | grep -q 'Candidate: [^(]' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  # The release (no "-updates"/"-security" suffix) whose main component the system uses.
  found=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(IDENTIFIER) $(SOURCESENTRY)' 2>/dev/null |
    awk '$3 == "main" && $4 == "Packages" && $2 !~ /-/ { print $1, $2, $5; exit }')
  if [ -z "$found" ]; then
    echo "kreg: ${missing[*]} come from the $component component, and the apt sources have no Debian release whose main component kreg could copy" >&2
    return 1
  fi
  read -r uri release entry <<<"$found"
  dir=$(kreg_apt_private "$release" "$entry" "$component") || return 1
  KREG_APT_PRIVATE=(-o "Dir::Etc::SourceParts=$dir/sources.list.d" -o "Dir::State::Lists=$dir/lists")
  echo "kreg: ${missing[*]}: from $release $component ($uri), through kreg's own apt sources in $dir; /etc/apt is unchanged"
  apt-get "${KREG_APT_PRIVATE[@]}" update -q >/dev/null 2>&1 || {
    apt-get "${KREG_APT_PRIVATE[@]}" update -q >&2
    return 1
  }
}

kreg_conflict() {
  local harm=$1 release=$2 pkg version what
  shift 2
  echo "kreg: STOPPED: installing $* would change packages you installed:" >&2
  while read -r pkg version what; do
    case $what in
      removed) echo "kreg:   $pkg $version would be removed" >&2 ;;
      blocks) echo "kreg:   $pkg $version stands in the way (apt finds no plan that keeps it)" >&2 ;;
      *) echo "kreg:   $pkg $version would be downgraded to ${what#downgraded-to:}" >&2 ;;
    esac
  done <<<"$harm"
  if [ -n "$release" ]; then
    echo "kreg: even from $release, the release of the installed version." >&2
  else
    echo "kreg: and no release in reach offers the installed version with what $* needs." >&2
  fi
  echo "kreg: nothing was installed. Install $* in versions that fit (apt-get install -t RELEASE $*," >&2
  echo "kreg: with RELEASE where your $(kreg_harm_names "$harm") came from), or accept apt's change with" >&2
  echo "kreg:   apt-get install --no-install-recommends $*" >&2
  echo "kreg: then run this command again." >&2
}

# Every installed package and its version, to compare before and after the set-up.
kreg_dpkg_snapshot() {
  local status
  eval "$(apt-config shell status Dir::State::status/f)"
  dpkg-query --admindir="$(dirname "$status")" -W -f '${db:Status-Abbrev} ${Package}:${Architecture} ${Version}\n' |
    awk '$1 ~ /^.i/ { print $2, $3 }' | sort
}

# Fails, naming them, when a package of BEFORE (a snapshot) is gone or older now.
kreg_check_nothing_lost() {
  local before=$1 now lost
  now=$(kreg_dpkg_snapshot)
  lost=$(join -a1 <(echo "$before") <(echo "$now") | while read -r pkg old new; do
    if [ -z "$pkg" ]; then
      continue
    elif [ -z "$new" ]; then
      echo "  $pkg $old was removed"
    elif dpkg --compare-versions "$new" lt "$old"; then
      echo "  $pkg $old was downgraded to $new"
    fi
  done)
  if [ -n "$lost" ]; then
    echo "kreg: the set-up changed installed packages, which it must never do:" >&2
    echo "$lost" >&2
    return 1
  fi
}

# What the demo needs: scenarios/lab-hackbench.yaml on the local qemu lab.
kreg_need_demo() {
  if [ -z "${DATABASE_URL:-}" ]; then
    kreg_group "PostgreSQL for the results (kreg starts its own cluster)" @initdb:postgresql
  fi
  kreg_group "qemu for the lab VM" qemu-system-x86_64:qemu-system-x86
  kreg_group "the lab guest's programs (busybox, hackbench) and the kernel modules' tools" \
    @static_busybox:busybox-static hackbench:rt-tests modinfo:kmod xz:xz-utils ldd:libc-bin dpkg-deb:dpkg
}

# What compiling a real kernel needs besides a compiler (the lab bisection builds
# linux-source-6.1; scripts/test-kernel.sh too).
kreg_need_kernel_build() {
  kreg_group "the kernel's own build needs (build-essential, bc, libelf, libssl)" \
    /usr/share/doc/build-essential:build-essential bc:bc /usr/include/libelf.h:libelf-dev \
    /usr/include/openssl/ssl.h:libssl-dev
}

# What the tests need besides the demo's.
kreg_need_tests() {
  kreg_group "PostgreSQL for the tests" @initdb:postgresql
  kreg_group "disk images for the lab machine (qemu-img, debootstrap, partitions, ext4)" \
    qemu-img:qemu-utils /usr/sbin/debootstrap:debootstrap /sbin/sfdisk:fdisk /sbin/mke2fs:e2fsprogs cpio:cpio
  kreg_group "kernel builds from a tree (a compiler, make, flex, bison, Debian's 6.1 source)" \
    gcc:gcc make:make flex:flex bison:bison patch:patch git:git readelf:binutils \
    /usr/src/linux-source-6.1.tar.xz:linux-source-6.1
  kreg_need_kernel_build
  kreg_group "machines over SSH in network namespaces (sshd, ip)" /usr/sbin/sshd:openssh-server ip:iproute2
  kreg_group "MySQL workloads (MariaDB, sysbench)" /usr/sbin/mariadbd:mariadb-server sysbench:sysbench
  KREG_COMPONENT=non-free kreg_group "netperf (from Debian's non-free component)" netperf:netperf netserver:netperf
  kreg_group "HammerDB's Tcl (Tcl 8.6, its threads, the MySQL and SQLite bindings)" tclsh8.6:tcl8.6 \
    '/usr/lib/tcltk/*/thread2*/pkgIndex.tcl:tcl-thread' '/usr/lib/tcltk/*/mysqltcl*/pkgIndex.tcl:mysqltcl' \
    /usr/lib/tcltk/sqlite3/pkgIndex.tcl:libsqlite3-tcl
  kreg_group "perf and the tests' helpers" perf:linux-perf python3:python3 kexec:kexec-tools
  kreg_group "building perf 7.2 for perf sched stats (its libraries' headers)" \
    /usr/include/traceevent/event-parse.h:libtraceevent-dev /usr/include/libelf.h:libelf-dev \
    /usr/include/elfutils/libdw.h:libdw-dev pkg-config:pkgconf xz:xz-utils
  kreg_group "the dashboard's browser tests (Chromium and its WebDriver)" chromium:chromium chromedriver:chromium-driver
}

# The lab fetches kernels with `apt-get download`, which needs current package lists.
# Installs what each named need asks for (kreg_need_NAME), refreshes the package lists when
# they are old, and fails if anything that was installed before is gone or older now.
kreg_set_up() {
  local before need
  before=$(kreg_dpkg_snapshot)
  for need in "$@"; do
    "kreg_need_$need"
  done
  kreg_need_apt_lists
  kreg_check_nothing_lost "$before"
}

kreg_need_apt_lists() {
  if ! find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | grep -q . \
     || ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
    kreg_apt_update_once
  fi
}
