#include "instr_stream.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tpusim {

InstrStream::InstrStream(Producer producer, std::size_t window)
    : producer_(std::move(producer)), window_(std::max<std::size_t>(window, 1)) {}

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
    std::unique_lock<std::mutex> lock(mu_);
    if (buf_.size() >= window_ && base_ + buf_.size() > demand_) {
        // Full: hand the readers what they wait for, and resume at half the window (one wake
        // per half window released, not one per instruction).
        if (readers_waiting_ > 0) cv_.notify_all();
        producer_waiting_ = true;
        cv_.wait(lock, [this] {
            return cancel_ || buf_.size() <= window_ / 2 || base_ + buf_.size() <= demand_;
        });
        producer_waiting_ = false;
    }
    if (cancel_) throw Cancelled{};
    buf_.push_back(std::move(in));
    // Readers waiting for the producer wake when a batch past what they asked for is there.
    const bool wake = readers_waiting_ > 0 && base_ + buf_.size() > demand_ + kBatch;
    lock.unlock();
    if (wake) cv_.notify_all();
}

const Instr& InstrStream::at(std::size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_) {
        started_ = true;
        thread_ = std::thread([this] { body(); });
    }
    if (i < base_) throw std::logic_error("instruction stream: instruction already released");
    while (i >= base_ + buf_.size() && !done_) {
        demand_ = std::max(demand_, i);
        if (producer_waiting_) cv_.notify_all();
        ++readers_waiting_;
        cv_.wait(lock);
        --readers_waiting_;
    }
    if (i >= base_ + buf_.size()) {
        if (error_) std::rethrow_exception(error_);
        throw std::logic_error("instruction stream: index past the end");
    }
    return buf_[i - base_];
}

std::size_t InstrStream::add_reader() {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back(base_);
    return released_.size() - 1;
}

void InstrStream::release(std::size_t reader, std::size_t below) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (reader >= released_.size())
            throw std::logic_error("instruction stream: no such reader");
        released_[reader] = std::max(released_[reader], below);
        const std::size_t low = *std::min_element(released_.begin(), released_.end());
        if (low <= base_) return;
        const std::size_t n = std::min(low - base_, buf_.size());
        buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n));
        base_ += n;
        if (!producer_waiting_ || buf_.size() > window_ / 2) return;
    }
    cv_.notify_all();
}

std::size_t InstrStream::held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return buf_.size();
}

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
