// Verilator testbench for the exported xDSA core (sim/verilator.py builds and runs it).
//
// Input file (little-endian):  u64 mem_bytes, bytes[mem_bytes] memory image,
//                              u32 n_keys, n x {u8 table, u8 index, u8 count, u8 pad},
//                              u64 start, u64 max_cycles, u32 progress (0/1)
// Output file:                 a stream of events, then the final state:
//   'R' + retire payload words (XDSA_RETIRE_WORDS x u32)     one per retired instruction
//   'W' + u64 row + be words (XDSA_BE_WORDS x u32)           one per memory write
//   'E' + u64 cycles + u32 stopped + u32 status + u32 fault + u64 fault_pc + u64 run_ns
//       + bytes[mem_bytes] memory + bytes[1024] keys
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <chrono>
#include "Vxdsa_core.h"
#include "verilated.h"
#include "xdsa_layout.h"
#if XDSA_TRACE
#include "verilated_vcd_c.h"
#endif

static Vxdsa_core *top;
static uint64_t cycle_count = 0;
static FILE *out;
#if XDSA_TRACE
static VerilatedVcdC *vcd;
#endif

static void tick() {
    top->clk = 0;
    top->eval();
#if XDSA_TRACE
    vcd->dump(2 * cycle_count);
#endif
    top->clk = 1;
    top->eval();
#if XDSA_TRACE
    vcd->dump(2 * cycle_count + 1);
#endif
    cycle_count++;
}

static uint32_t wb(uint32_t addr, bool we, uint32_t value, uint32_t sel) {
    top->XDSA_WB(cyc) = 1;
    top->XDSA_WB(stb) = 1;
    top->XDSA_WB(we) = we;
    top->XDSA_WB(adr) = addr >> 2;
    top->XDSA_WB(dat_w) = value;
    top->XDSA_WB(sel) = sel;
    for (int i = 0; i < 1000; i++) {
        top->eval();
        tick();
        if (top->XDSA_WB(ack)) {
            uint32_t data = top->XDSA_WB(dat_r);
            top->XDSA_WB(cyc) = 0;
            top->XDSA_WB(stb) = 0;
            top->XDSA_WB(we) = 0;
            top->eval();
            return data;
        }
    }
    fprintf(stderr, "verilator tb: no Wishbone ack at 0x%08x\n", addr);
    exit(3);
}

static void put(const void *p, size_t n) { fwrite(p, 1, n, out); }

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s input output [vcd]\n", argv[0]);
        return 2;
    }
    Verilated::commandArgs(1, argv);
    FILE *in = fopen(argv[1], "rb");
    if (!in) { perror(argv[1]); return 2; }
    uint64_t mem_bytes;
    if (fread(&mem_bytes, 8, 1, in) != 1) return 2;
    std::vector<uint8_t> mem(mem_bytes);
    if (fread(mem.data(), 1, mem_bytes, in) != mem_bytes) return 2;
    uint32_t n_keys;
    if (fread(&n_keys, 4, 1, in) != 1) return 2;
    std::vector<uint8_t> keys(4 * n_keys);
    if (n_keys && fread(keys.data(), 4, n_keys, in) != n_keys) return 2;
    uint64_t start, max_cycles;
    uint32_t progress;
    if (fread(&start, 8, 1, in) != 1 || fread(&max_cycles, 8, 1, in) != 1 ||
        fread(&progress, 4, 1, in) != 1) return 2;
    fclose(in);
    out = fopen(argv[2], "wb");
    if (!out) { perror(argv[2]); return 2; }

    top = new Vxdsa_core;
#if XDSA_TRACE
    Verilated::traceEverOn(true);
    vcd = new VerilatedVcdC;
    top->trace(vcd, 99);
    vcd->open(argc > 3 ? argv[3] : "xdsa.vcd");
#endif
    XDSA_TIE_DOMAIN_PORTS(top);
    top->rst = 1;
    tick();
    tick();
    top->rst = 0;
    // load the memory through the host port, skipping zero words (the memory resets to 0)
    for (uint64_t a = 0; a < mem_bytes; a += 4) {
        uint32_t w = mem[a] | mem[a + 1] << 8 | mem[a + 2] << 16 | (uint32_t)mem[a + 3] << 24;
        if (w) wb((uint32_t)a, true, w, 0xF);
    }
    for (uint32_t k = 0; k < n_keys; k++) {
        uint32_t addr = XDSA_REG_KEYS + 256 * keys[4 * k] + keys[4 * k + 1];
        wb(addr & ~3u, true, (uint32_t)keys[4 * k + 2] << (8 * (addr & 3)), 1u << (addr & 3));
    }
    wb(XDSA_REG_START, true, (uint32_t)start, 0xF);
    wb(XDSA_REG_START + 4, true, (uint32_t)(start >> 32), 0xF);
    wb(XDSA_REG_CTRL, true, 1, 0xF);

    uint64_t run_start = cycle_count, next_report = 1u << 20;
    auto wall_start = std::chrono::steady_clock::now();
    while (cycle_count - run_start < max_cycles) {
        top->eval();
        if (top->trace_wr_valid) {
            put("W", 1);
            uint64_t row = top->trace_wr_row;
            put(&row, 8);
            XDSA_PUT_BE(top);
        }
        if (top->retire_valid) {
            put("R", 1);
            XDSA_PUT_RETIRE(top);
        }
        if (top->stopped) break;
        tick();
        if (progress && cycle_count - run_start >= next_report) {
            fprintf(stderr, "\r  %llu cycles", (unsigned long long)(cycle_count - run_start));
            next_report += 1u << 20;
        }
    }
    if (progress) fprintf(stderr, "\r");
    uint64_t cycles = cycle_count - run_start;
    uint64_t run_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - wall_start).count();
    uint32_t stopped = top->stopped;
    uint32_t status = wb(XDSA_REG_STATUS, false, 0, 0xF);
    uint32_t fault = wb(XDSA_REG_FAULT, false, 0, 0xF);
    uint64_t fault_pc = wb(XDSA_REG_FAULT_PC, false, 0, 0xF);
    fault_pc |= (uint64_t)wb(XDSA_REG_FAULT_PC + 4, false, 0, 0xF) << 32;
    put("E", 1);
    put(&cycles, 8);
    put(&stopped, 4);
    put(&status, 4);
    put(&fault, 4);
    put(&fault_pc, 8);
    put(&run_ns, 8);
    for (uint64_t a = 0; a < mem_bytes; a += 4) {
        uint32_t w = wb((uint32_t)a, false, 0, 0xF);
        put(&w, 4);
    }
    for (uint32_t a = 0; a < 1024; a += 4) {
        uint32_t w = wb(XDSA_REG_KEYS + a, false, 0, 0xF);
        put(&w, 4);
    }
    fclose(out);
#if XDSA_TRACE
    vcd->close();
#endif
    top->final();
    delete top;
    return 0;
}
