from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import AllowAny


class TokenView(ObtainAuthToken):
    """POST username and password, get the API token (send it as `Authorization: Token <key>`)."""

    permission_classes = [AllowAny]
