#include "flavour_probe.hpp"
probe::Report probe::host_report() { return PROBE_REPORT; }
