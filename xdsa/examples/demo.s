; xDSA demo: a few BASE instructions on small int8/int16/fp32 vectors.
; `xdsa demo` assembles this file, runs it and prints the labelled results.
.as 32

.text 0x0
main:
    ; c = saturate_s8(a + b)
    add.s8 src0=a, src1=b, dst=sum, len=8, sat=1
    ; p = a * b as full 16-bit products
    mul src0=a, src1=b, dst=prod, len=8, src0_unit=s8, dst_unit=s16, src1_unit=s8
    ; total = sum of the products
    reduce_sum.s16 src=prod, dst=total, fw=8, fh=1, fc=1, axis=7
    ; gt = (a > b) as uint8 flags
    sgt src0=a, src1=b, dst=gt, len=8, src0_unit=s8, dst_unit=u8, src1_unit=s8
    ; t = transpose of the 2 x 4 matrix m
    data_move.s8 src=m, dst=mt, transfer_mode=transpose, src_trans_size=8, src_line_stride=4, src_width=4, des_trans_size=8, des_line_stride=2, des_width=2
    ; y = x * 0.5 in fp32
    mul.f32 src0=x, src1=half, dst=y, len=4
    exit
    end

.tables 0x400

.data 0x800
a:
    .s8 100, -100, 7, -7, 127, -128, 0, 1
b:
    .s8 100, -100, 3, 9, 1, -1, 0, -1
m:
    .s8 1, 2, 3, 4, 5, 6, 7, 8
x:
    .f32 1.0, -3.0, 0.25, 1e+30
half:
    .f32 0.5, 0.5, 0.5, 0.5
sum:
    .zero 8
prod:
    .zero 16
total:
    .zero 2
gt:
    .zero 8
mt:
    .zero 8
y:
    .zero 16
