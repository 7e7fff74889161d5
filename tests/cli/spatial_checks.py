"""What the spatial-partitioning test (mlperf_spatial_partition.sh) checks for both SSD and
Mask R-CNN: the replica layout and the halo exchanges' collective-permutes. Import it from a
test run in the source root: sys.path.insert(0, "tests/cli")."""


def ceil(a, b):
    return -(-a // b)


def out_rows(h, k, st, padding):
    return ceil(h, st) if padding == "same" else (h - k) // st + 1


def where(core, chips_x):
    """(replica, slice) of a core: a chip is y * chips_x + x (docs/ici.md); a replica is the
    chips (x, 2r) and (x, 2r + 1), its slices on (y offset, core) in order."""
    chip = core // 2
    x, y = chip % chips_x, chip // chips_x
    return (y // 2, x), (y % 2) * 2 + core % 2


def replica_cores(cores, chips_x, slices):
    """Per replica, its cores by slice."""
    reps = {}
    for c in range(cores):
        rep, sl = where(c, chips_x)
        reps.setdefault(rep, [None] * slices)[sl] = c
    return reps


def check_permutes(ops, prefix, rows, n, w, ch, layer, *, slices, images, replicas, chips_x,
                   one_hop=False):
    """The permutes prefix_lo{d} / prefix_hi{d} of `ops`: rows (low, high) of an activation of
    n rows (slices of ceil(n / slices)), w columns, ch channels, `images` per replica; each
    from every core to the core d slices away in its replica (one_hop: neighbours one ICI hop
    apart at most). Returns the ids of the permutes with the prefix."""
    s = ceil(n, slices)
    for side, want in zip(("lo", "hi"), rows):
        got = sorted(i for i in ops if i.startswith(f"{prefix}_{side}"))
        assert len(got) == ceil(want, s), (layer, side, got, want, s)
        total = 0
        for d in range(1, len(got) + 1):
            o = ops[f"{prefix}_{side}{d}"]
            assert o["kind"] == "collective_permute" and o["dtype"] == "bf16", o["id"]
            r, rem = divmod(o["bytes"], images * w * ch * 2)
            assert rem == 0 and 1 <= r <= s, (o["id"], o["bytes"], s)
            total += r
            pairs = o["source_target_pairs"]
            assert len(pairs) == replicas * (slices - d), (o["id"], len(pairs))
            for src, dst in pairs:
                (rs, ss), (rd, sd) = where(src, chips_x), where(dst, chips_x)
                assert rs == rd and sd - ss == (d if side == "lo" else -d), (o["id"], src, dst)
                if one_hop and d == 1:
                    (ya, xa), (yb, xb) = divmod(src // 2, chips_x), divmod(dst // 2, chips_x)
                    assert abs(ya - yb) + abs(xa - xb) <= 1, (o["id"], src, dst)
        assert total == want, (layer, side, total, want)
    return [i for i in ops if i.startswith(prefix + "_")]
