#include "plain_sample.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fastdds/dds/core/LoanableSequence.hpp>

#include "endpoints.hpp"

namespace perfgate {
namespace dds = compat::dds;

namespace {

constexpr uint32_t kHeaderBytes = sizeof(PlainHeader);
constexpr uint8_t kLittleEndianCdr[4] = {0x00, 0x01, 0x00, 0x00};

uint8_t* data_of(void* memory)
{
    return static_cast<uint8_t*>(memory) + kHeaderBytes;
}

const uint8_t* data_of(const void* memory)
{
    return static_cast<const uint8_t*>(memory) + kHeaderBytes;
}

}  // namespace

uint32_t plain_capacity(const LatencyOptions& options)
{
    return options.payloads.empty() ? 0 : *std::max_element(options.payloads.begin(), options.payloads.end());
}

SampleIO sample_io(const LatencyOptions& options)
{
    return SampleIO{options.loans, options.loans ? plain_capacity(options) : 0};
}

bool to_plain(const LatencySample& sample, void* memory, uint32_t capacity)
{
    if (sample.data.size() > capacity)
    {
        return false;
    }
    auto* header = static_cast<PlainHeader*>(memory);
    header->seq = sample.seq;
    header->kind = static_cast<uint32_t>(sample.kind);
    header->timestamp_ns = sample.timestamp_ns;
    header->origin = sample.origin;
    header->size = static_cast<uint32_t>(sample.data.size());
    if (!sample.data.empty())
    {
        std::memcpy(data_of(memory), sample.data.data(), sample.data.size());
    }
    return true;
}

bool from_plain(const void* memory, uint32_t capacity, LatencySample& sample)
{
    const auto* header = static_cast<const PlainHeader*>(memory);
    if (header->size > capacity || header->kind > static_cast<uint32_t>(SampleKind::report))
    {
        return false;
    }
    sample.seq = header->seq;
    sample.kind = static_cast<SampleKind>(header->kind);
    sample.timestamp_ns = header->timestamp_ns;
    sample.origin = header->origin;
    sample.data.assign(data_of(memory), data_of(memory) + header->size);
    return true;
}

PlainSampleType::PlainSampleType(uint32_t capacity)
    : compat::TopicDataTypeAdapter("perfgate::PlainSample" + std::to_string(capacity),
              sizeof(kLittleEndianCdr) + kHeaderBytes + capacity)
    , capacity_(capacity)
{
}

uint32_t PlainSampleType::encode(const void* sample, uint8_t* buffer, uint32_t capacity) const
{
    const uint32_t size = sizeof(kLittleEndianCdr) + kHeaderBytes + capacity_;
    if (capacity < size)
    {
        return 0;
    }
    std::memcpy(buffer, kLittleEndianCdr, sizeof(kLittleEndianCdr));
    std::memcpy(buffer + sizeof(kLittleEndianCdr), sample, kHeaderBytes + capacity_);
    return size;
}

bool PlainSampleType::decode(const uint8_t* buffer, uint32_t length, void* sample) const
{
    if (length < sizeof(kLittleEndianCdr) + kHeaderBytes + capacity_)
    {
        return false;
    }
    std::memcpy(sample, buffer + sizeof(kLittleEndianCdr), kHeaderBytes + capacity_);
    return true;
}

uint32_t PlainSampleType::encoded_size(const void*) const
{
    return sizeof(kLittleEndianCdr) + kHeaderBytes + capacity_;
}

void* PlainSampleType::new_sample() const
{
    // calloc: aligned for the header's int64, and no uninitialised bytes are ever sent
    return std::calloc(1, kHeaderBytes + capacity_);
}

void PlainSampleType::free_sample(void* sample) const
{
    std::free(sample);
}

bool write_sample_to(dds::DataWriter& writer, const LatencySample& sample, const SampleIO& io)
{
    if (!io.loans)
    {
        return compat::write_sample(writer, const_cast<LatencySample*>(&sample));
    }
    void* loaned = nullptr;
    if (!compat::succeeded(writer.loan_sample(loaned)))
    {
        throw RunError("Fast DDS refused to loan a sample on topic " + writer.get_topic()->get_name() +
                " (--loans on needs a plain type, which this is, and a writer that can loan)");
    }
    if (!to_plain(sample, loaned, io.capacity) || !compat::write_sample(writer, loaned))
    {
        writer.discard_loan(loaned);
        return false;
    }
    return true;
}

bool take_sample_from(dds::DataReader& reader, LatencySample& sample, dds::SampleInfo& info, const SampleIO& io)
{
    if (!io.loans)
    {
        return compat::succeeded(reader.take_next_sample(&sample, &info));
    }
    dds::LoanableSequence<PlainHeader> samples;
    dds::SampleInfoSeq infos;
    if (!compat::succeeded(reader.take(samples, infos, 1)))
    {
        return false;
    }
    info = infos[0];
    if (info.valid_data && !from_plain(&samples[0], io.capacity, sample))
    {
        info.valid_data = false;  // a corrupt sample is skipped as invalid data
    }
    reader.return_loan(samples, infos);
    return true;
}

}  // namespace perfgate
