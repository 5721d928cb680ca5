/* Dumps what a host's TSC shows: fenced back-to-back deltas (start/stop as the driver reads them),
   increments of consecutive distinct unfenced reads, and the readings of samples timing a short busy loop.
   Record a new host for tests/fixtures/hosts/ with: gcc -O2 tools/clock-dump.c && taskset -c 0 ./a.out
   (then gzip the three .txt files); `driver step` replays them through the driver's step estimator. */
#include <stdio.h>
#include <stdint.h>
static inline uint64_t t_start(void){uint32_t lo,hi;__asm__ volatile("lfence\n\trdtsc\n\tlfence":"=a"(lo),"=d"(hi)::"memory");return((uint64_t)hi<<32)|lo;}
static inline uint64_t t_stop(void){uint32_t lo,hi,aux;__asm__ volatile("rdtscp\n\tlfence":"=a"(lo),"=d"(hi),"=c"(aux)::"memory");return((uint64_t)hi<<32)|lo;}
static inline uint64_t t_raw(void){uint32_t lo,hi;__asm__ volatile("rdtsc":"=a"(lo),"=d"(hi));return((uint64_t)hi<<32)|lo;}
enum{N=20001};
static uint64_t a[N];
int main(void){
  FILE*f=fopen("fenced_deltas.txt","w");for(int i=0;i<N;i++){uint64_t x=t_start(),y=t_stop();a[i]=y-x;}for(int i=0;i<N;i++)fprintf(f,"%lu\n",a[i]);fclose(f);
  f=fopen("raw_increments.txt","w");for(int i=0;i<N;i++){uint64_t x=t_raw(),y=t_raw();while(y==x)y=t_raw();a[i]=y-x;}for(int i=0;i<N;i++)fprintf(f,"%lu\n",a[i]);fclose(f);
  f=fopen("busy_loop_samples.txt","w");volatile uint64_t s=0;for(int i=0;i<N;i++){uint64_t x=t_start();for(int k=0;k<300;k++)s+=k;uint64_t y=t_stop();a[i]=y-x;}for(int i=0;i<N;i++)fprintf(f,"%lu\n",a[i]);fclose(f);
  return 0;}
