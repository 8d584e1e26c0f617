// MPI_Ibcast as an MPI program uses it, each case checked byte for byte.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/mpi/check_util.h"

#if MPI_VERSION < 4
#include <mpi-ext.h>
#endif
#if MPI_VERSION >= 4
#define BCAST_INIT MPI_Bcast_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define BCAST_INIT MPIX_Bcast_init
#endif

namespace mpi_check {
namespace {

std::vector<unsigned char> initial(MPI_Comm comm, std::size_t n, int root, uint64_t seed) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank == root ? pattern(n, seed) : std::vector<unsigned char>(n, 0xEE);
}

}  // namespace

void ibcast_cases(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  // Every root, MPI_Wait.
  for (int root = 0; root < size; ++root) {
    for (std::size_t n : {std::size_t{1}, std::size_t{1405}, std::size_t{300000}}) {
      MPI_Request req;
      auto buf = initial(comm, n, root, n + 7 * root);
      check(MPI_Ibcast(buf.data(), static_cast<int>(n), MPI_BYTE, root, comm, &req) == MPI_SUCCESS,
            "MPI_Ibcast returned an error");
      check(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && req == MPI_REQUEST_NULL,
            "MPI_Wait on an Ibcast");
      check(buf == pattern(n, n + 7 * root),
            "ibcast " + std::to_string(n) + " bytes from root " + std::to_string(root));
    }
  }

  // Three in flight on one communicator, a blocking Bcast among them,
  // completed by one Waitall in reverse order, with a ring Isend/Irecv.
  {
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    std::vector<unsigned char> a = initial(comm, 70000, 0, 1);
    std::vector<unsigned char> b = initial(comm, 5000, size - 1, 2);
    std::vector<unsigned char> mid = initial(comm, 9000, 0, 3);
    std::vector<unsigned char> c = initial(comm, 1 << 20, size / 2, 4);
    int token_out = rank, token_in = -1;
    MPI_Request r[5];
    MPI_Ibcast(a.data(), 70000, MPI_BYTE, 0, comm, &r[4]);
    MPI_Ibcast(b.data(), 5000, MPI_BYTE, size - 1, comm, &r[3]);
    MPI_Bcast(mid.data(), 9000, MPI_BYTE, 0, comm);
    MPI_Ibcast(c.data(), 1 << 20, MPI_BYTE, size / 2, comm, &r[2]);
    MPI_Irecv(&token_in, 1, MPI_INT, prev, 77, comm, &r[1]);
    MPI_Isend(&token_out, 1, MPI_INT, next, 77, comm, &r[0]);
    check(MPI_Waitall(5, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
    check(a == pattern(70000, 1) && b == pattern(5000, 2) && mid == pattern(9000, 3) &&
              c == pattern(1 << 20, 4),
          "overlapping ibcasts with a bcast among them");
    check(token_in == prev, "the ring message beside the ibcasts");
  }

  // Progress while the rank blocks elsewhere: receivers wait in MPI_Recv for
  // a message the root sends only after its own Ibcast completed; the root's
  // completion needs the receivers' stage-2 work meanwhile.
  {
    const std::size_t n = 2 << 20;
    MPI_Request req;
    auto buf = initial(comm, n, 0, 5);
    MPI_Ibcast(buf.data(), static_cast<int>(n), MPI_BYTE, 0, comm, &req);
    int go = 0;
    if (rank == 0) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      go = 1;
      for (int r = 1; r < size; ++r)
        MPI_Send(&go, 1, MPI_INT, r, 78, comm);
    } else {
      MPI_Recv(&go, 1, MPI_INT, 0, 78, comm, MPI_STATUS_IGNORE);
      int flag = 0;
      while (!flag)
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    check(go == 1 && buf == pattern(n, 5), "ibcast progressing during MPI_Recv");
  }

  // MPI_Ibcast is local: rank 1 posts two ibcasts and then sends to rank 0,
  // which posts them only once it has that message. Posting the second must
  // not wait for the first to complete (with ranks 0 and 1 on one node,
  // rank 0 is rank 1's leader and the first one's bytes come from it).
  if (size >= 2) {
    std::vector<unsigned char> a = initial(comm, 100000, size - 1, 8);
    std::vector<unsigned char> b = initial(comm, 3000, 0, 9);
    MPI_Request r[3];
    int n = 0, note = 0;
    auto post_both = [&] {
      MPI_Ibcast(a.data(), 100000, MPI_BYTE, size - 1, comm, &r[n++]);
      MPI_Ibcast(b.data(), 3000, MPI_BYTE, 0, comm, &r[n++]);
    };
    if (rank == 0) {
      MPI_Recv(&note, 1, MPI_INT, 1, 79, comm, MPI_STATUS_IGNORE);
      post_both();
    } else {
      post_both();
      note = 1;
      if (rank == 1) MPI_Isend(&note, 1, MPI_INT, 0, 79, comm, &r[n++]);
    }
    check(MPI_Waitall(n, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
    check(note == 1 && a == pattern(100000, 8) && b == pattern(3000, 9),
          "two ibcasts posted before a send their late rank waits for");
  }

  // Waitany and Testsome over ibcasts and a point-to-point pair.
  {
    std::vector<unsigned char> x = initial(comm, 40000, 0, 6);
    std::vector<unsigned char> y = initial(comm, 3000, size - 1, 7);
    MPI_Request r[2];
    MPI_Ibcast(x.data(), 40000, MPI_BYTE, 0, comm, &r[0]);
    MPI_Ibcast(y.data(), 3000, MPI_BYTE, size - 1, comm, &r[1]);
    int index = -1, done = 0;
    while (done < 2) {
      MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE);
      check(index == 0 || index == 1, "MPI_Waitany index");
      ++done;
    }
    check(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "Waitany freed both");
    check(x == pattern(40000, 6) && y == pattern(3000, 7), "ibcasts by MPI_Waitany");
    std::vector<unsigned char> z = initial(comm, 20000, 1 % size, 8);
    MPI_Ibcast(z.data(), 20000, MPI_BYTE, 1 % size, comm, &r[0]);
    int outcount = 0, indices[1];
    do {
      MPI_Testsome(1, r, &outcount, indices, MPI_STATUSES_IGNORE);
    } while (outcount == 0);
    check(outcount == 1 && z == pattern(20000, 8), "ibcast by MPI_Testsome");
  }

#ifdef BCAST_INIT
  // Persistent: started five times with new bytes each (Wait, then Test and
  // Testall loops, then Startall with a second one), then freed.
  {
    std::vector<unsigned char> buf(50000), two(700);
    MPI_Request req[2];
    check(BCAST_INIT(buf.data(), 50000, MPI_BYTE, 0, comm, MPI_INFO_NULL, &req[0]) == MPI_SUCCESS,
          "persistent broadcast init");
    BCAST_INIT(two.data(), 700, MPI_BYTE, size - 1, comm, MPI_INFO_NULL, &req[1]);
    for (int round = 0; round < 5; ++round) {
      // New bytes in the same storage: the requests hold the buffers' addresses.
      const auto b =
          rank == 0 ? pattern(50000, 100 + round) : std::vector<unsigned char>(50000, 0xEE);
      const auto t =
          rank == size - 1 ? pattern(700, 200 + round) : std::vector<unsigned char>(700, 0);
      std::copy(b.begin(), b.end(), buf.begin());
      std::copy(t.begin(), t.end(), two.begin());
      if (round < 2) {
        MPI_Start(&req[0]);
        int flag = 0;
        if (round == 0) {
          MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        } else {
          while (!flag)
            MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
        }
      } else {
        MPI_Startall(2, req);
        // MPICH 4.0.2's own MPI_Testall fails on persistent collectives
        // (MPI_ERR_IN_STATUS, no error in any status): where the MPI carries
        // them (one host, no adapter) the program could not use it.
#ifndef MPICH_VERSION
        if (round == 2) {
          int flag = 0;
          while (!flag)
            MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE);
        } else
#endif
        {
          MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        }
        check(two == pattern(700, 200 + round),
              "second persistent broadcast, round " + std::to_string(round));
      }
      check(buf == pattern(50000, 100 + round),
            "persistent broadcast, round " + std::to_string(round));
      check(req[0] != MPI_REQUEST_NULL, "a persistent request stays allocated");
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    check(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "persistent requests freed");
  }
#endif

  // A non-contiguous datatype: receivers unpack at completion, gaps untouched.
  {
    MPI_Datatype vec;
    MPI_Type_vector(300, 2, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    std::vector<int> want(900, -1), got(900, -1);
    for (int i = 0; i < 300; ++i)
      want[static_cast<std::size_t>(3 * i)] = i, want[static_cast<std::size_t>(3 * i + 1)] = -i;
    if (rank == 0) got = want;
    MPI_Request req;
    MPI_Ibcast(got.data(), 1, vec, 0, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check(got == want, "ibcast of a vector datatype");
    MPI_Type_free(&vec);
  }
}

}  // namespace mpi_check
