# Run until done: the fileset is used up and the first thread done ends the run.
set $dir=/tmp
set $nfiles=300
set mode quit firstdone
define fileset name=new,path=$dir,size=4k,entries=$nfiles,dirwidth=50
define process name=p
{
  thread name=maker,instances=2
  {
    flowop createfile name=create,filesetname=new,fd=1
    flowop writewholefile name=write,fd=1,iosize=4k
    flowop closefile name=close,fd=1
  }
}
