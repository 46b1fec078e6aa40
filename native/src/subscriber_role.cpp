#include "subscriber_role.hpp"

#include "throughput_results.hpp"

#include <iostream>
#include <thread>

namespace perfgate {
namespace dds = compat::dds;
using Clock = std::chrono::steady_clock;

namespace {

// Fast DDS 2.9's TCP client drops the server's bind response when it arrives before the participant
// has queued the logical ports of its initial peers (RTCPMessageManager::processRTCPMessage only
// accepts it with a non-empty pending list): the connection stays up, never established, and
// discovery never starts. On loopback the response takes a few hundred microseconds, so a
// descheduled main thread loses the race now and then. Nothing matched after this long means that
// happened: a new participant makes a new connection. A normal start matches well within it.
constexpr auto kTcpRestartAfter = std::chrono::seconds(2);
constexpr auto kTcpRestartPause = std::chrono::milliseconds(200);

}  // namespace

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

bool SubscriberState::end_seen_by(Clock::time_point deadline)
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [this]() { return end_ || !failure_.empty(); });
    return end_;
}

SubscriberState::Outcome SubscriberState::wait_for_end()
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this]() { return end_ || !failure_.empty(); });
    // The end marker wins over the publisher leaving right after it.
    return end_ ? Outcome::end_marker : Outcome::failure;
}

PingListener::PingListener(SubscriberState& state, uint32_t subscriber_index, bool echo, uint32_t echo_delay_ns,
        const SampleIO& io)
    : ReaderListenerBase(state)
    , state_(state)
    , subscriber_index_(subscriber_index)
    , echo_(echo)
    , echo_delay_(echo_delay_ns)
    , io_(io)
{
}

namespace {

// Spinning rather than sleeping: a sleep wakes up tens of microseconds late on a loaded machine,
// which would make the injected regression larger and noisier than asked.
void busy_wait(std::chrono::nanoseconds duration)
{
    const auto until = Clock::now() + duration;
    while (Clock::now() < until)
    {
    }
}

}  // namespace

void PingListener::on_data_available(dds::DataReader* reader)
{
    std::lock_guard<std::mutex> lock(take_mutex_);
    try
    {
        take_all(*reader);
    }
    catch (const RunError& error)  // a refused loan: nothing may throw on Fast DDS' thread
    {
        state_.failed(error.what());
    }
}

void PingListener::take_all(dds::DataReader& reader)
{
    dds::SampleInfo info;
    while (take_sample_from(reader, sample_, info, io_))
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
                    if (echo_delay_.count() > 0)
                    {
                        busy_wait(echo_delay_);
                    }
                    sample_.origin = subscriber_index_;
                    write_sample_to(*pong_writer_, sample_, io_);
                }
                break;
            case SampleKind::handshake:
                // Every subscriber answers, so the publisher knows all pong writers reach it.
                sample_.origin = subscriber_index_;
                sample_.data.clear();
                write_sample_to(*pong_writer_, sample_, io_);
                state_.handshake_seen();
                break;
            case SampleKind::end:
                state_.end_seen();
                break;
            case SampleKind::burst:
            {
                const int64_t arrival = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        Clock::now().time_since_epoch()).count();
                if (sample_.origin != counted_test_)
                {
                    counted_test_ = sample_.origin;
                    received_ = 0;
                    test_start_ns_ = sample_.timestamp_ns;
                }
                ++received_;
                last_arrival_ns_ = arrival;
                break;
            }
            case SampleKind::report_request:
            {
                const bool counted = sample_.seq == counted_test_ && received_ > 0;
                sample_.kind = SampleKind::report;
                sample_.origin = subscriber_index_;
                sample_.data = encode_report(counted ? received_ : 0,
                        counted ? last_arrival_ns_ - test_start_ns_ : 0);
                write_sample_to(*pong_writer_, sample_, io_);
                break;
            }
            case SampleKind::report:
                break;  // only publishers read reports
        }
    }
}

SubscriberRole::SubscriberRole(const LatencyOptions& options, uint32_t subscriber_index, bool echo,
        const std::string& participant_name, StopRequest& stop)
    : options_(options)
    , subscriber_index_(subscriber_index)
    , participant_name_(participant_name)
    , stop_subscription_(stop.subscribe([this]() { state_.interrupt(); }))
    , writer_listener_(state_)
    , ping_listener_(state_, subscriber_index, echo, options.echo_delay_ns, sample_io(options))
    , endpoints_(create_endpoints())
{
}

std::unique_ptr<Endpoints> SubscriberRole::create_endpoints()
{
    return std::make_unique<Endpoints>(options_, Side::subscriber, subscriber_index_, participant_name_,
            writer_listener_, ping_listener_, [this](dds::DataWriter& writer) { ping_listener_.set_pong_writer(writer); });
}

SubscriberState::Outcome SubscriberRole::wait_for_handshake(Clock::time_point deadline)
{
    while (options_.transport == Transport::tcpv4)
    {
        const auto restart_at = Clock::now() + kTcpRestartAfter;
        if (restart_at + kTcpRestartAfter > deadline)
        {
            break;  // too late for another participant to discover anything
        }
        const SubscriberState::Outcome outcome = state_.wait_for_handshake(restart_at);
        if (outcome != SubscriberState::Outcome::timeout || state_.matched_readers() > 0 ||
                state_.matched_writers() > 0)
        {
            return outcome == SubscriberState::Outcome::timeout ? state_.wait_for_handshake(deadline) : outcome;
        }
        std::cerr << "perfgate-latency: subscriber on tcpv4 matched nothing in "
                  << std::chrono::duration_cast<std::chrono::seconds>(kTcpRestartAfter).count()
                  << " s: creating its participant again" << std::endl;
        endpoints_.reset();
        // Let the publisher close the old connection before the new one binds under the same
        // locator (a TCP client's physical port is its process id).
        std::this_thread::sleep_for(kTcpRestartPause);
        endpoints_ = create_endpoints();
    }
    return state_.wait_for_handshake(deadline);
}

void SubscriberRole::run(const std::function<void(const std::string&)>& announce)
{
    const std::string where = std::string("subscriber on ") + to_string(options_.transport);
    const auto deadline = Clock::now() + std::chrono::seconds(options_.discovery_timeout_s);
    switch (wait_for_handshake(deadline))
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
