#include "throughput_results.hpp"

#include <sstream>

#include "measurements.hpp"

namespace perfgate {
namespace {

constexpr std::size_t kReportBytes = 16;

void put_u64(std::vector<uint8_t>& out, uint64_t value)
{
    for (int byte = 0; byte < 8; ++byte)
    {
        out.push_back(static_cast<uint8_t>(value >> (8 * byte)));
    }
}

uint64_t get_u64(const uint8_t* in)
{
    uint64_t value = 0;
    for (int byte = 7; byte >= 0; --byte)
    {
        value = (value << 8) | in[byte];
    }
    return value;
}

std::string microseconds(int64_t ns)
{
    return format_latency(static_cast<double>(ns) / 1000.0);
}

}  // namespace

std::vector<uint8_t> encode_report(uint64_t received, int64_t subscription_ns)
{
    std::vector<uint8_t> data;
    data.reserve(kReportBytes);
    put_u64(data, received);
    put_u64(data, static_cast<uint64_t>(subscription_ns));
    return data;
}

bool decode_report(const std::vector<uint8_t>& data, uint64_t& received, int64_t& subscription_ns)
{
    if (data.size() != kReportBytes)
    {
        return false;
    }
    received = get_u64(data.data());
    subscription_ns = static_cast<int64_t>(get_u64(data.data() + 8));
    return true;
}

std::string format_throughput_csv(const std::vector<ThroughputTestResult>& results)
{
    std::ostringstream out;
    out << "Payload [Bytes],Demand [sample/burst],Recovery time [ms],Sent [samples],Publication time [us],"
           "Received [samples],Subscription time [us]\n";
    for (const ThroughputTestResult& result : results)
    {
        out << result.payload << ',' << result.burst << ',' << result.recovery_ms << ',' << result.sent << ','
            << microseconds(result.publication_ns) << ',' << result.received << ','
            << microseconds(result.subscription_ns) << '\n';
    }
    return out.str();
}

}  // namespace perfgate
