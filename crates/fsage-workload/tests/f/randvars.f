# Random variables: define randvar (uniform, gamma, tabular; min, round, seed, randsrc),
# randvar() in a set, cvars of several types, indexed picks and drawn I/O sizes.
set $dir=/tmp
define randvar name=$u, type=uniform, min=1k, mean=4k, round=512, seed=7
define randvar name=$g, type=gamma, min=512, mean=8k, gamma=1500, randsrc=rand48
define randvar name=$tab, type=tabular, min=1k, round=1k, randtable =
{{ 70, 1k, 4k},
 { 20, 4k, 16k},
 { 10, 16k, 64k}}
set $sizes = randvar(type=tabular, min=1k, randtable =
{{ 50, 2k, 8k},
 { 50, 8k, 32k}
})
set $idx = randvar(type=gamma, min=0, gamma=100)
set $cu = cvar(type=cvar-uniform,parameters=lower:1024;upper:8192)
set $ce = cvar(type=cvar-exponential,parameters=mean:4096, max=65536, round=512)
define fileset name=files,path=$dir,size=$sizes,entries=200,dirwidth=20,prealloc=100
define process name=p
{
  thread name=t
  {
    flowop openfile name=o,filesetname=files,indexed=$idx,fd=1
    flowop read name=r,fd=1,iosize=$u,random
    flowop read name=rg,fd=1,iosize=$g,random
    flowop appendfilerand name=a,fd=1,iosize=$tab
    flowop read name=rc,fd=1,iosize=$cu,random
    flowop read name=re,fd=1,iosize=$ce,random
    flowop closefile name=c,fd=1
    flowop statfile name=s,filesetname=files,indexed=$idx
  }
}
run 1
