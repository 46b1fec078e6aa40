// The TopicDataType of LatencySample, written by hand (no fastddsgen) on the compatibility adapter.
#pragma once

#include "fastdds_compat.hpp"
#include "latency_sample.hpp"

namespace perfgate {

class LatencySampleType : public compat::TopicDataTypeAdapter
{
public:
    LatencySampleType();

protected:
    uint32_t encode(const void* sample, uint8_t* buffer, uint32_t capacity) const override;
    bool decode(const uint8_t* buffer, uint32_t length, void* sample) const override;
    uint32_t encoded_size(const void* sample) const override;
    void* new_sample() const override;
    void free_sample(void* sample) const override;
};

}  // namespace perfgate
