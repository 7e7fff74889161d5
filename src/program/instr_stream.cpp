#include "instr_stream.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tpusim {

InstrStream::InstrStream(Producer producer, std::size_t window, std::size_t size)
    : producer_(std::move(producer)),
      window_(std::max<std::size_t>(window, 1)),
      size_(size),
      blocks_(std::make_unique<std::unique_ptr<Instr[]>[]>(size / kBlock + 1)) {}

InstrStream::~InstrStream() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        cancel_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void InstrStream::body() {
    std::exception_ptr error;
    try {
        producer_([this](Instr&& in) { push(std::move(in)); });
    } catch (const Cancelled&) {
    } catch (...) {
        error = std::current_exception();
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
        error_ = error;
    }
    cv_.notify_all();
}

void InstrStream::push(Instr&& in) {
    const std::size_t n = produced_.load(std::memory_order_relaxed);  // this thread's own
    if (n - floor_.load() >= window_ && n > demand_.load()) {
        // Full: hand the readers what they wait for, and resume at half the window (one wake
        // per half window released, not one per instruction).
        std::unique_lock<std::mutex> lock(mu_);
        if (readers_waiting_.load() > 0) cv_.notify_all();
        producer_waiting_ = true;
        cv_.wait(lock, [&] {
            return cancel_ || n - floor_.load() <= window_ / 2 || n <= demand_.load();
        });
        producer_waiting_ = false;
        if (cancel_) throw Cancelled{};
    }
    if (n >= size_)
        throw std::logic_error(
            "instruction stream: the lowering made more instructions than "
            "its first pass counted");
    if (n % kBlock == 0) blocks_[n / kBlock] = std::make_unique<Instr[]>(kBlock);
    blocks_[n / kBlock][n % kBlock] = std::move(in);
    produced_.store(n + 1);  // publishes the instruction (and its block) to the readers
    // Readers waiting for the producer wake when a batch past what they asked for is there.
    if (readers_waiting_.load() > 0 && n + 1 > demand_.load() + kBatch) {
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
    }
}

const Instr& InstrStream::wait_for(std::size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_) {
        started_ = true;
        thread_ = std::thread([this] { body(); });
    }
    if (i < floor_.load())
        throw std::logic_error("instruction stream: instruction already released");
    if (i >= produced_.load() && !done_) {
        demand_ = std::max(demand_.load(), i);
        ++readers_waiting_;
        while (i >= produced_.load() && !done_) {
            if (producer_waiting_.load()) cv_.notify_all();
            cv_.wait(lock);
        }
        --readers_waiting_;
    }
    if (i >= produced_.load()) {
        if (error_) std::rethrow_exception(error_);
        throw std::logic_error("instruction stream: index past the end");
    }
    return blocks_[i / kBlock][i % kBlock];
}

std::size_t InstrStream::add_reader() {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back(floor_.load());
    return released_.size() - 1;
}

void InstrStream::release(std::size_t reader, std::size_t below) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (reader >= released_.size())
            throw std::logic_error("instruction stream: no such reader");
        released_[reader] = std::max(released_[reader], below);
        const std::size_t low =
            std::min(*std::min_element(released_.begin(), released_.end()), produced_.load());
        if (low <= floor_.load()) return;
        floor_ = low;
        // Blocks wholly below every reader: the producer writes none of them again, and the
        // readers, on this thread, read none of them again.
        while ((freed_blocks_ + 1) * kBlock <= low) blocks_[freed_blocks_++].reset();
        if (!producer_waiting_.load() || produced_.load() - low > window_ / 2) return;
    }
    cv_.notify_all();
}

std::size_t InstrStream::held() const { return produced_.load() - floor_.load(); }

// SharedInstrs' streamed side.

SharedInstrs::SharedInstrs(std::shared_ptr<InstrStream> stream, std::size_t size)
    : v_(std::make_shared<const InstrList>()), stream_(std::move(stream)), size_(size) {}

const Instr& SharedInstrs::streamed_at(std::size_t i) const { return stream_->at(i); }

void SharedInstrs::release_streamed(std::size_t reader, std::size_t below) const {
    stream_->release(reader, below);
}

std::size_t SharedInstrs::add_reader() const { return stream_ ? stream_->add_reader() : 0; }

std::size_t SharedInstrs::resident() const { return stream_ ? stream_->held() : v_->size(); }

const InstrList& SharedInstrs::held() const {
    if (stream_) throw std::logic_error("a streamed instruction list is read by index");
    return *v_;
}

}  // namespace tpusim
