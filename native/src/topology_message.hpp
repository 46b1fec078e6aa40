// The topology's message: a sequence number, the publisher's reading of the host's monotonic clock
// (std::chrono::steady_clock, CLOCK_MONOTONIC on Linux: comparable across processes on one machine)
// and msg_size bytes of payload. Encoded as little-endian CDR by hand (no fastddsgen).
#pragma once

#include <cstdint>
#include <vector>

#include "fastdds_compat.hpp"

namespace perfgate {

struct TopologyMessage
{
    uint64_t sequence = 0;
    int64_t sent_ns = 0;
    std::vector<uint8_t> payload;
};

class TopologyMessageType : public compat::TopicDataTypeAdapter
{
public:
    explicit TopologyMessageType(uint32_t largest_payload);

protected:
    uint32_t encode(const void* sample, uint8_t* buffer, uint32_t capacity) const override;
    bool decode(const uint8_t* buffer, uint32_t length, void* sample) const override;
    uint32_t encoded_size(const void* sample) const override;
    void* new_sample() const override;
    void free_sample(void* sample) const override;
};

}  // namespace perfgate
