// --role both: the publisher and its subscribers as separate participants in one process.
#pragma once

#include <functional>
#include <string>

#include "options.hpp"
#include "stop_request.hpp"

namespace perfgate {

// Runs the whole experiment in this process; throws RunError when it cannot finish or is stopped
// (after writing what was measured).
void run_both(const LatencyOptions& options, StopRequest& stop,
        const std::function<void(const std::string&)>& announce);

}  // namespace perfgate
