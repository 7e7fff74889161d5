#include "tpusim/arch/memory/hbm_address.h"

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim {

namespace {

unsigned log2_exact(std::uint64_t v, const char* what) {
    if (!is_power_of_two(v)) {
        throw std::invalid_argument(std::string("HBM address map: ") + what +
                                    " must be a power of two, got " + std::to_string(v));
    }
    unsigned b = 0;
    while ((std::uint64_t{1} << b) < v) ++b;
    return b;
}

}  // namespace

HbmAddressMap::HbmAddressMap(const HbmConfig& cfg, std::uint32_t owners) : owners_(owners) {
    const auto channels = static_cast<std::uint64_t>(cfg.channels());
    if (owners == 0 || channels % owners != 0) {
        throw std::invalid_argument("HBM address map: channels do not split between owners");
    }
    channels_per_owner_ = static_cast<std::uint32_t>(channels / owners);
    const unsigned owner_channel_bits = log2_exact(channels_per_owner_, "channels per core");
    // Stacks take the high part of an owner's channel index; with fewer stacks than owners
    // the stack field is empty and an owner's channels lie within one stack.
    const unsigned stack_bits_all = log2_exact(static_cast<std::uint64_t>(cfg.stacks), "stacks");
    const unsigned owner_bits = log2_exact(owners, "cores per chip");
    const unsigned stack_bits = stack_bits_all > owner_bits ? stack_bits_all - owner_bits : 0;
    channel_bits_ = owner_channel_bits - stack_bits;

    offset_bits_ = log2_exact(static_cast<std::uint64_t>(cfg.burst_bytes()), "burst bytes");
    const std::map<std::string, std::pair<Field, unsigned>> widths = {
        {"ro", {kRow, log2_exact(static_cast<std::uint64_t>(cfg.rows), "rows")}},
        {"ba", {kBank, log2_exact(static_cast<std::uint64_t>(cfg.banks_per_group), "banks")}},
        {"bg",
         {kBankGroup, log2_exact(static_cast<std::uint64_t>(cfg.bank_groups), "bank groups")}},
        {"co",
         {kColumn, log2_exact(static_cast<std::uint64_t>(cfg.row_bytes / cfg.burst_bytes()),
                              "bursts per row")}},
        {"pc",
         {kPc, log2_exact(static_cast<std::uint64_t>(cfg.pseudo_channels), "pseudo-channels")}},
        {"ch", {kChannel, channel_bits_}},
        {"st", {kStack, stack_bits}},
    };
    // The string lists fields most significant first: assign shifts from its end.
    std::vector<std::string> order;
    std::stringstream ss(cfg.address_mapping);
    for (std::string part; std::getline(ss, part, '-');) order.push_back(part);
    if (order.size() != kFields) {
        throw std::invalid_argument("HBM address map: bad mapping " + cfg.address_mapping);
    }
    unsigned shift = offset_bits_;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const auto w = widths.find(*it);
        if (w == widths.end()) {
            throw std::invalid_argument("HBM address map: bad field " + *it);
        }
        slices_[w->second.first] = Slice{w->second.first, shift, w->second.second};
        shift += w->second.second;
    }
    owner_bytes_ = Bytes{1} << shift;
    capacity_ = owner_bytes_ * owners;
}

HbmLocation HbmAddressMap::decode(Addr a) const {
    auto get = [&](Field f) {
        const Slice& s = slices_[f];
        return static_cast<std::uint32_t>((a >> s.shift) & ((Addr{1} << s.bits) - 1));
    };
    HbmLocation loc;
    loc.owner = owner_of(a);
    loc.row = get(kRow);
    loc.bank = get(kBank);
    loc.bank_group = get(kBankGroup);
    loc.column = get(kColumn);
    loc.pseudo_channel = get(kPc);
    const std::uint32_t local_channel = (get(kStack) << channel_bits_) | get(kChannel);
    loc.channel = loc.owner * channels_per_owner_ + local_channel;
    return loc;
}

Addr HbmAddressMap::encode(const HbmLocation& loc) const {
    auto put = [&](Field f, std::uint64_t v) {
        const Slice& s = slices_[f];
        return (v & ((Addr{1} << s.bits) - 1)) << s.shift;
    };
    const std::uint32_t local_channel = loc.channel % channels_per_owner_;
    return Addr{loc.owner} * owner_bytes_ | put(kRow, loc.row) | put(kBank, loc.bank) |
           put(kBankGroup, loc.bank_group) | put(kColumn, loc.column) |
           put(kPc, loc.pseudo_channel) | put(kChannel, local_channel) |
           put(kStack, local_channel >> channel_bits_);
}

}  // namespace tpusim
