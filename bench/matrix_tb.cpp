// Verilator testbench of the matrix engine alone (bench/matrix_harness.py builds and runs it).
//
// Input:  u64 mem_bytes, u64 max_cycles, cmd payload (NB_cmd_payload bytes), memory bytes.
// Output: u32 fault, u64 cycles (cmd.valid to the done transfer), u64 row reads on rd_a,
//         u64 row reads on rd_b, u64 row writes, memory bytes, written-byte mask (one byte each).
// Memory: bus.py's protocol, every port always ready; a read's response is valid exactly one
// cycle after the request transferred; a write takes effect at the transferring edge.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include "Vmatrix_top.h"
#include "verilated.h"
#include "matrix_ports.h"

static Vmatrix_top *top;

static void tick() {
    top->clk = 0;
    top->eval();
    top->clk = 1;
    top->eval();
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s input output\n", argv[0]); return 2; }
    FILE *in = fopen(argv[1], "rb");
    if (!in) { perror(argv[1]); return 2; }
    uint64_t mem_bytes, max_cycles;
    if (fread(&mem_bytes, 8, 1, in) != 1 || fread(&max_cycles, 8, 1, in) != 1) return 2;
    uint8_t cmd[NB_cmd_payload];
    if (fread(cmd, 1, NB_cmd_payload, in) != NB_cmd_payload) return 2;
    std::vector<uint8_t> mem(mem_bytes), touched(mem_bytes, 0);
    if (fread(mem.data(), 1, mem_bytes, in) != mem_bytes) return 2;
    fclose(in);
    const int R = NB_rd_a_rsp_data;

    top = new Vmatrix_top;
    top->rst = 1;
    tick();
    tick();
    top->rst = 0;
    top->rd_a_req_ready = 1;
    top->rd_b_req_ready = 1;
    top->wr_ready = 1;
    top->done_ready = 1;
    top->rd_a_rsp_valid = 0;
    top->rd_b_rsp_valid = 0;
    SET_cmd_payload(top, cmd);
    top->cmd_valid = 1;

    uint64_t cycles = 0, ra = 0, rb = 0, wn = 0;
    uint32_t fault = 0xFFFFFFFF;
    bool taken = false;
    std::vector<uint8_t> rsp_a(R), rsp_b(R), zero(R, 0), wdata(R), wbe(NB_wr_be);
    bool pend_a = false, pend_b = false;
    uint64_t row_a = 0, row_b = 0;
    while (cycles < max_cycles) {
        // responses for the requests that transferred in the previous cycle
        if (pend_a) { memcpy(rsp_a.data(), &mem[row_a * R], R); SET_rd_a_rsp_data(top, rsp_a.data()); }
        if (pend_b) { memcpy(rsp_b.data(), &mem[row_b * R], R); SET_rd_b_rsp_data(top, rsp_b.data()); }
        top->rd_a_rsp_valid = pend_a;
        top->rd_b_rsp_valid = pend_b;
        top->eval();
        bool done_now = top->done_valid;
        if (done_now) fault = top->done_fault;
        if (top->cmd_ready) taken = true;
        // requests transferring at this edge
        pend_a = top->rd_a_req_valid;
        pend_b = top->rd_b_req_valid;
        if (pend_a) { row_a = top->rd_a_req_row; ra++; if ((row_a + 1) * R > mem_bytes) { fprintf(stderr, "rd_a row %llu out of range\n", (unsigned long long)row_a); return 3; } }
        if (pend_b) { row_b = top->rd_b_req_row; rb++; if ((row_b + 1) * R > mem_bytes) { fprintf(stderr, "rd_b row %llu out of range\n", (unsigned long long)row_b); return 3; } }
        if (top->wr_valid) {
            uint64_t row = top->wr_row;
            if ((row + 1) * R > mem_bytes) { fprintf(stderr, "write row out of range\n"); return 3; }
            GET_wr_data(top, wdata.data());
            GET_wr_be(top, wbe.data());
            for (int b = 0; b < R; b++)
                if (wbe[b / 8] >> (b % 8) & 1) { mem[row * R + b] = wdata[b]; touched[row * R + b] = 1; }
            wn++;
        }
        tick();
        cycles++;
        if (taken) top->cmd_valid = 0;
        if (done_now) break;
    }
    FILE *out = fopen(argv[2], "wb");
    if (!out) { perror(argv[2]); return 2; }
    fwrite(&fault, 4, 1, out);
    fwrite(&cycles, 8, 1, out);
    fwrite(&ra, 8, 1, out);
    fwrite(&rb, 8, 1, out);
    fwrite(&wn, 8, 1, out);
    fwrite(mem.data(), 1, mem_bytes, out);
    fwrite(touched.data(), 1, mem_bytes, out);
    fclose(out);
    top->final();
    delete top;
    return 0;
}
