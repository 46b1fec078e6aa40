// Taking turns with another measuring process: `perfgate ab` runs the baseline's and the
// candidate's publishers at the same time and lets them measure in alternating blocks of round
// trips, so that a state of the machine that lasts milliseconds to seconds (where the host runs
// the vCPUs, a neighbour's load) hits both builds alike instead of one whole run.
//
// The turn is one byte on a connected pair of Unix sockets the supervisor created, one end for
// each side: waiting is receiving it, passing is sending it back. Only one side measures at any
// time; the other sleeps in poll(). A socket, not a pipe: sending to a partner that has exited
// fails with EPIPE instead of raising SIGPIPE, and closing the pair ends the partner's wait.
#pragma once

#include <functional>

namespace perfgate {

class TurnTaking
{
public:
    // `socket`: the inherited end of the pair (the process owns it from now on); -1 for a
    // process that measures alone.
    explicit TurnTaking(int socket);
    ~TurnTaking();
    TurnTaking(const TurnTaking&) = delete;
    TurnTaking& operator=(const TurnTaking&) = delete;

    bool enabled() const { return socket_ >= 0; }

    // Blocks until the partner passes the turn. Throws RunError when `interrupted` turns true
    // (kInterruptedBySignal) or the partner is gone: its end closed without passing the turn.
    void wait(const std::function<bool()>& interrupted);

    // Hands the turn to the partner. A partner that already finished its last turn and exited is
    // not an error here: if it still needed a turn from us, it reports the failure itself.
    void pass();

private:
    int socket_;
};

}  // namespace perfgate
