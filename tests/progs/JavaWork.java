// JavaWork.java — a parallel stream and a ForkJoin sum on the JVM's common pool, the runtime tests' Java program.
//
//     java JavaWork ROUNDS [UNTIL]
//
// Each round prints `round=R result=X` and `pool=P round=R`: P the CPUs the JVM counts, which size its GC threads and its
// common pool (-XX:ActiveProcessorCount sets it), X the same for any P. Then `done`.
import java.io.File;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;
import java.util.stream.LongStream;

public class JavaWork {
    static final class Sum extends RecursiveTask<Long> {
        final long lo, hi;

        Sum(long lo, long hi) {
            this.lo = lo;
            this.hi = hi;
        }

        @Override
        protected Long compute() {
            if (hi - lo < 100_000) {
                long s = 0;
                for (long i = lo; i < hi; i++)
                    s += (i * 2654435761L) % 1000;
                return s;
            }
            long mid = (lo + hi) >>> 1;
            Sum left = new Sum(lo, mid);
            left.fork();
            return new Sum(mid, hi).compute() + left.join();
        }
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: java JavaWork ROUNDS [UNTIL]");
            System.exit(2);
        }
        int rounds = Integer.parseInt(args[0]);
        File until = args.length > 1 ? new File(args[1]) : null;
        for (int r = 0; r < rounds || (until != null && !until.exists()); r++) {
            long a = LongStream.range(0, 200_000_000L).parallel().map(x -> (x * 40503L) % 997).sum();
            long b = ForkJoinPool.commonPool().invoke(new Sum(0, 200_000_000L));
            System.out.println("round=" + r + " result=" + a + ":" + b);
            System.out.println("pool=" + Runtime.getRuntime().availableProcessors() + " round=" + r);
        }
        System.out.println("done");
    }
}
