#pragma once
// HBM address map of one chip. The address space is split into equal, contiguous halves (one
// per TensorCore, the owner's index in the most significant bits): the published v3
// description says each core uses half of the chip's HBM as its local memory, so core k owns
// the channels [k * C, (k + 1) * C) with C = channels / cores. Inside an owner's slice the
// bits above the burst offset are decoded by HbmConfig::address_mapping, most significant
// field first ("ro-ba-co-bg-pc-ch-st").
#include <array>
#include <cstdint>

#include "tpusim/common/types.h"
#include "tpusim/config/hbm_config.h"

namespace tpusim {

struct HbmLocation {
    std::uint32_t owner = 0;    // TensorCore that owns the address
    std::uint32_t channel = 0;  // chip-wide channel index (stack-major)
    std::uint32_t pseudo_channel = 0;
    std::uint32_t bank_group = 0;
    std::uint32_t bank = 0;  // within its bank group
    std::uint32_t row = 0;
    std::uint32_t column = 0;  // in bursts

    // Chip-wide pseudo-channel index, the unit that owns a scheduler and a data bus.
    std::uint32_t pc_index(std::uint32_t pseudo_channels) const {
        return channel * pseudo_channels + pseudo_channel;
    }
    bool operator==(const HbmLocation& o) const {
        return owner == o.owner && channel == o.channel && pseudo_channel == o.pseudo_channel &&
               bank_group == o.bank_group && bank == o.bank && row == o.row && column == o.column;
    }
};

class HbmAddressMap {
 public:
    // Contract: `cfg` passed config validation; `owners` (TensorCores per chip) divides the
    // channel count into a power of two. Throws std::invalid_argument otherwise.
    HbmAddressMap(const HbmConfig& cfg, std::uint32_t owners);

    HbmLocation decode(Addr a) const;
    // Inverse of decode (column counted in bursts, byte offset zero).
    Addr encode(const HbmLocation& loc) const;

    Bytes burst_bytes() const { return Bytes{1} << offset_bits_; }
    Bytes capacity_bytes() const { return capacity_; }
    Bytes owner_bytes() const { return owner_bytes_; }
    std::uint32_t owners() const { return owners_; }
    std::uint32_t owner_of(Addr a) const { return static_cast<std::uint32_t>(a / owner_bytes_); }
    bool is_local(std::uint32_t core, Addr a) const { return owner_of(a) == core; }
    // First address of `core`'s local half.
    Addr local_base(std::uint32_t core) const { return Addr{core} * owner_bytes_; }

 private:
    enum Field { kRow, kBank, kBankGroup, kColumn, kPc, kChannel, kStack, kFields };
    struct Slice {
        Field field;
        unsigned shift;
        unsigned bits;
    };
    std::array<Slice, kFields> slices_{};
    unsigned offset_bits_ = 0;
    unsigned channel_bits_ = 0;  // width of the "ch" field within an owner's slice
    std::uint32_t owners_ = 1;
    std::uint32_t channels_per_owner_ = 1;
    Bytes owner_bytes_ = 0;
    Bytes capacity_ = 0;
};

}  // namespace tpusim
