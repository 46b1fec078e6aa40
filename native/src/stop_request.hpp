// SIGTERM and SIGINT as a request to stop: the roles end what they wait for, the publisher writes
// the payloads it completed, and the process exits 3. No signal handler runs: the signals are
// blocked in every thread and one watcher thread takes them with sigwait, so whatever reacts to
// them is ordinary code (locks, condition variables) on that thread.
#pragma once

#include <csignal>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace perfgate {

// What a stopped run reports: the report JSON's error and the last line on stderr.
constexpr const char* kInterruptedBySignal = "interrupted by signal";

class StopRequest
{
public:
    class Subscription;

    // Blocks SIGTERM and SIGINT in the calling thread and starts the watcher. Construct it first
    // in main, before any other thread exists: threads inherit the mask (Fast DDS' included), so
    // only the watcher ever receives these signals.
    StopRequest();
    // Ends the watcher. The signals stay blocked: one arriving now is left pending as the process ends.
    ~StopRequest();
    StopRequest(const StopRequest&) = delete;
    StopRequest& operator=(const StopRequest&) = delete;

    bool requested() const;

    // `on_stop` runs on the watcher thread when a signal arrives, or at once (on this thread) if one
    // already did. It must not call back into this object. It is never called again once the
    // returned subscription is destroyed, so it may use what the subscriber owns.
    Subscription subscribe(std::function<void()> on_stop);

    class Subscription
    {
    public:
        ~Subscription();
        Subscription(Subscription&& other) noexcept;
        Subscription(const Subscription&) = delete;
        Subscription& operator=(const Subscription&) = delete;
        Subscription& operator=(Subscription&&) = delete;

    private:
        friend class StopRequest;
        Subscription(StopRequest* owner, std::list<std::function<void()>>::iterator entry);
        StopRequest* owner_;
        std::list<std::function<void()>>::iterator entry_;
    };

private:
    void watch();

    sigset_t signals_;
    mutable std::mutex mutex_;  // held while callbacks run, so unsubscribing waits for them
    bool requested_ = false;
    bool closing_ = false;
    std::list<std::function<void()>> callbacks_;
    std::thread watcher_;
};

// Asks the kernel to send this process SIGTERM when the process that started it dies (perfgate,
// even killed by SIGKILL), so a harness never outlives its supervisor; with a StopRequest in place
// that is an ordinary request to stop. A write to the dead parent's pipe (stdout, stderr) then fails
// with EPIPE instead of killing the process with SIGPIPE before it deletes its participants, which
// left their shared-memory files in /dev/shm. Call it from main before starting any work.
void stop_when_parent_dies();

}  // namespace perfgate
