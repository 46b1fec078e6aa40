"""fastdds_build: the parts of `perfgate build` (perfgate/build.py, the command), one concern each.

Workspace layout (kept between builds, so that a commit touching one file rebuilds in minutes):

    WS/src/fastdds/            the Fast DDS source: a git checkout, or a mirror of a local folder
    WS/src/perfgate_harness/   a mirror of native/
    WS/src/fastcdr/            Fast CDR when the system's does not fit: --fastcdr-source, else the
                               commit's own submodule pin (thirdparty/fastcdr), fetched from its URL
    WS/src/foonathan_memory_vendor/   only when given by option (else the system's)
    WS/build/ WS/install/ WS/log/   colcon's (merged install: the Fast DDS prefix is WS/install)
    WS/installs/<commit>/      copies of WS/install of the last few commits, each with its own record;
    WS/installs/<name>         links to them (--keep-as), e.g. baseline
    WS/ccache/                 the compiler cache (unless CCACHE_DIR is set)
    WS/perfgate/               mirror manifests and the upstream engine's files
    WS/perfgate-build.json     the build record: what was built, from where, how, and whether it worked

    git          what --commit names, and the checkout of it
    workspace    the folders above, the workspace lock, and the sources put into WS/src
    colcon       the colcon command, its CMake options and environment, the harness's link check
    kept         WS/installs: keeping a build's install per commit, reusing it, names, pruning
    record       perfgate-build.json: read by run, ab and gate; the JUnit testcase "build"
    logs         log tails fit for XML
    failed_gate  what `perfgate gate --workspace` writes when the build failed

What the source is and needs (package, version, Fast CDR) is perfgate/fastdds_source.py's.
"""
