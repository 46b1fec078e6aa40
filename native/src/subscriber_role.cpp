#include "subscriber_role.hpp"

#include <iostream>

namespace perfgate {
namespace dds = compat::dds;
using Clock = std::chrono::steady_clock;

void SubscriberState::handshake_seen()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        handshake_ = true;
    }
    changed_.notify_all();
}

void SubscriberState::end_seen()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        end_ = true;
    }
    changed_.notify_all();
}

SubscriberState::Outcome SubscriberState::wait_for_handshake(Clock::time_point deadline)
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [this]() { return handshake_ || end_ || !failure_.empty(); });
    if (end_)
    {
        return Outcome::end_marker;
    }
    if (!failure_.empty())
    {
        return Outcome::failure;
    }
    return handshake_ ? Outcome::handshake : Outcome::timeout;
}

SubscriberState::Outcome SubscriberState::wait_for_end()
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this]() { return end_ || !failure_.empty(); });
    // The end marker wins over the publisher leaving right after it.
    return end_ ? Outcome::end_marker : Outcome::failure;
}

PingListener::PingListener(SubscriberState& state, uint32_t subscriber_index, bool echo)
    : ReaderListenerBase(state)
    , state_(state)
    , subscriber_index_(subscriber_index)
    , echo_(echo)
{
}

void PingListener::on_data_available(dds::DataReader* reader)
{
    std::lock_guard<std::mutex> lock(take_mutex_);
    dds::SampleInfo info;
    while (compat::succeeded(reader->take_next_sample(&sample_, &info)))
    {
        if (!info.valid_data)
        {
            continue;
        }
        switch (sample_.kind)
        {
            case SampleKind::ping:
                if (echo_)
                {
                    sample_.origin = subscriber_index_;
                    compat::write_sample(*pong_writer_, &sample_);
                }
                break;
            case SampleKind::handshake:
                // Every subscriber answers, so the publisher knows all pong writers reach it.
                sample_.origin = subscriber_index_;
                sample_.data.clear();
                compat::write_sample(*pong_writer_, &sample_);
                state_.handshake_seen();
                break;
            case SampleKind::end:
                state_.end_seen();
                break;
        }
    }
}

SubscriberRole::SubscriberRole(const LatencyOptions& options, uint32_t subscriber_index, bool echo,
        const std::string& participant_name)
    : options_(options)
    , writer_listener_(state_)
    , ping_listener_(state_, subscriber_index, echo)
    , endpoints_(options, Side::subscriber, subscriber_index, participant_name, writer_listener_, ping_listener_,
              [this](dds::DataWriter& writer) { ping_listener_.set_pong_writer(writer); })
{
}

void SubscriberRole::run(const std::function<void(const std::string&)>& announce)
{
    const std::string where = std::string("subscriber on ") + to_string(options_.transport);
    const auto deadline = Clock::now() + std::chrono::seconds(options_.discovery_timeout_s);
    switch (state_.wait_for_handshake(deadline))
    {
        case SubscriberState::Outcome::end_marker:
            return;
        case SubscriberState::Outcome::failure:
            throw RunError(state_.failure() + " (" + where + ")");
        case SubscriberState::Outcome::timeout:
            throw RunError("discovery timeout after " + std::to_string(options_.discovery_timeout_s) + " s: " + where +
                    " got no handshake from the publisher (matched " + std::to_string(state_.matched_readers()) +
                    " ping writers, " + std::to_string(state_.matched_writers()) + " pong readers)");
        case SubscriberState::Outcome::handshake:
            break;
    }
    announce("matched");
    if (state_.wait_for_end() != SubscriberState::Outcome::end_marker)
    {
        throw RunError(state_.failure() + " (" + where + ", before the publisher's end marker)");
    }
}

}  // namespace perfgate
