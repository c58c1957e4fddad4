# Counts what candidate packings of the record store would take, over a --no_dedup BTF of the
# reference vmlinux (python3 encodings.py ref.nodedup.btf; see README.md). Nothing is timed.
# B: id widths 0/8/16/32 + varint number; C: exact bit width; C2: even widths (built);
# D: widths 0,4,8,12,16,20,24,32.
import struct, sys, collections
data=open(sys.argv[1],'rb').read()
magic,ver,flags,hlen,toff,tlen,soff,slen=struct.unpack_from('<HBBIIIII',data,0)
t=data[hlen+toff:hlen+toff+tlen]
W=struct.unpack('<%dI'%(len(t)//4),t)
EXTRA={1:1,3:3,14:1,17:1}
PER={4:3,5:3,6:2,13:2,15:3,19:3}
i=0; tid=0
tplnum={}
def zz(x): return (x<<1) if x>=0 else ((-x)<<1)-1
def vb(n,firstbits):  # bytes for number with firstbits in first byte then 7/byte
    b=1; cap=1<<firstbits
    while n>=cap: cap<<=7; b+=1
    return b
numhist=collections.Counter()
S=collections.Counter()
while i<len(W):
    tid+=1
    info=W[i+1]; kind=(info>>24)&0x1f; vlen=info&0xffff
    n=3+EXTRA.get(kind,0)+PER.get(kind,0)*vlen
    rec=list(W[i:i+n]); i+=n
    if kind in (1,16,6,19,7): idw=()
    elif kind==3: idw=(3,4)
    elif kind in (4,5): idw=[3+3*k+1 for k in range(vlen)]
    elif kind==15: idw=[3+3*k for k in range(vlen)]
    elif kind==13: idw=[2]+[3+2*k+1 for k in range(vlen)]
    else: idw=(2,)
    ids=[rec[w] for w in idw]
    for w in idw: rec[w]=0
    num=tplnum.setdefault(tuple(rec),len(tplnum))
    numhist[num.bit_length()]+=1
    d=[zz(x-tid) for x in ids]
    m=max(d).bit_length() if d else 0
    k=len(d)
    # B: classes 0/8/16/32, header 2 bits class + varint number (5 bits first)
    cls = 0 if k==0 else (1 if m<=8 else 2 if m<=16 else 4)
    S['B']+=vb(num,5)+k*cls
    # C: exact bits 5-bit width, header: w(5)+number varint 2 bits first.. use separate: first byte w(5)+3 bits number
    S['C']+=vb(num,2)+ (k*m+7)//8
    # C2: width stored in 4 bits as ceil to even (0,2,..,30)+ bits
    S['C2']+=vb(num,3)+ (k*((m+1)//2*2)+7)//8
    # D: width classes 0,4,8,12,16,24,32 (3 bits), number varint 4 bits first
    ws=[0,4,8,12,16,20,24,32]; wq=next(x for x in ws if x>=m)
    S['D']+=vb(num,4)+(k*wq+7)//8
print({k:v for k,v in S.items()})
print("num bits hist",sorted(numhist.items()))
