"""perfgate: a CI latency gate for eProsima Fast DDS."""

__version__ = "0.1.0"
