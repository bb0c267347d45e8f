#include "flavour_probe.hpp"
probe::Report probe::nvcc_report() { return PROBE_REPORT; }
