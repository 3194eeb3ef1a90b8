# Directory filesets: makedir until every leaf exists, removedir, listdir.
set $dir=/tmp
set mode quit alldone
define fileset name=mk,path=$dir,size=0,leafdirs=200,dirwidth=20
define fileset name=rm,path=$dir,size=0,leafdirs=200,dirwidth=20,prealloc
define fileset name=ls,path=$dir,size=1k,entries=100,dirwidth=10,prealloc
define process name=p
{
  thread name=make
  {
    flowop makedir name=mkdir,filesetname=mk
  }
  thread name=remove
  {
    flowop removedir name=rmdir,filesetname=rm
  }
  thread name=list
  {
    flowop listdir name=list,filesetname=ls
    flowop finishoncount name=enough,value=500,target=list
  }
}
run 30
