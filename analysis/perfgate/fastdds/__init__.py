"""fastdds: the Fast DDS under test and the native harness built against it.

    build            `perfgate build`: one source -> a persistent colcon workspace
    source           what a Fast DDS source is and needs, read from the source itself
    workspace        the workspace's folders, its lock, its sources
    git              what `--commit` asks for, and its checkout
    colcon           the colcon build: command line, CMake options
    kept             the last few installs of a workspace, one per commit
    record           WS/perfgate-build.json: what a build was
    logs             build and git output made fit for JUnit, JSON and Markdown
    harness          the native harness (native/), built on first use into a cache
    security         DDS Security files for one run (a CA, identities, governance, permissions)

May import: the core and escape. Nothing that measures or judges.
"""
