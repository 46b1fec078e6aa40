"""The harness's environment: every Fast DDS variable left out (their names recorded, never their values)."""
from __future__ import annotations

from typing import Mapping


# Every variable Fast DDS reads to change its configuration behind the command line's back.
FASTDDS_ENV_PREFIXES = ("FASTRTPS_", "FASTDDS_")
FASTDDS_ENV_NAMES = ("SKIP_DEFAULT_XML", "ROS_DISCOVERY_SERVER", "ROS_SUPER_CLIENT")
CHILD_ENV = {"SKIP_DEFAULT_XML": "1"}  # and no DEFAULT_FASTRTPS_PROFILES.xml from any folder
RUN_ID_ENV = "PERFGATE_RUN_ID"  # marks the run's processes, so a leftover one can be found


# --- environment --------------------------------------------------------------------------------
def is_fastdds_variable(name: str) -> bool:
    return name.startswith(FASTDDS_ENV_PREFIXES) or name in FASTDDS_ENV_NAMES


def scrub_environment(environment: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the children's environment, the NAMES of the Fast DDS variables left out: a value may be a secret)."""
    ignored = sorted(k for k in environment if is_fastdds_variable(k))
    clean = {k: v for k, v in environment.items() if not is_fastdds_variable(k)}
    clean.update(CHILD_ENV)
    return clean, ignored
