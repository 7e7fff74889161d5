#pragma once
// An instruction stream lowered on demand (private to the program layer; SharedInstrs is its
// face). A producer thread runs the lowering and appends instructions; it runs at most
// `window` instructions ahead of the slowest reader's release point, unless a reader asks for
// one further on (then it goes on until it has it, so two readers far apart never deadlock).
// Instructions every reader has released are freed. References returned by at() stay valid
// until the instruction is released (std::deque keeps references across push_back and
// pop_front of other elements).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "tpusim/program/program.h"

namespace tpusim {

class InstrStream {
 public:
    using Push = std::function<void(Instr&&)>;
    // Appends the stream's instructions, in order, through `push`.
    using Producer = std::function<void(const Push& push)>;

    InstrStream(Producer producer, std::size_t window);
    ~InstrStream();  // stops the producer and joins it
    InstrStream(const InstrStream&) = delete;
    InstrStream& operator=(const InstrStream&) = delete;

    // Instruction i: waits until it is produced. Throws what the producer threw, or
    // std::logic_error when i was released or lies past the end.
    const Instr& at(std::size_t i);
    std::size_t add_reader();
    void release(std::size_t reader, std::size_t below);
    // Instructions held now (produced and not freed): for tests of the bound.
    std::size_t held() const;

 private:
    struct Cancelled {};
    void push(Instr&& in);
    void body();

    Producer producer_;
    const std::size_t window_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Instr> buf_;
    std::size_t base_ = 0;               // index of buf_.front()
    std::size_t demand_ = 0;             // highest index a reader waits for
    std::vector<std::size_t> released_;  // per reader
    bool started_ = false, done_ = false, cancel_ = false, producer_waiting_ = false;
    std::size_t readers_waiting_ = 0;
    static constexpr std::size_t kBatch = 256;  // see push()
    std::exception_ptr error_;
    std::thread thread_;
};

}  // namespace tpusim
